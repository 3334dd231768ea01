//! TOSA 1.0 flatbuffer reader and lowering to the npuc IR.
