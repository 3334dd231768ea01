//! TFLite flatbuffer reader and lowering to the npuc IR.
