//! Ethos-U85 weight ordering, weight streams and scale/bias streams.
