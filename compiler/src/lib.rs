//! npuc library.
