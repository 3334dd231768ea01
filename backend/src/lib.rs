//! Ethos-U85 backend.
