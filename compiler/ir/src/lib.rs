//! Graph IR, operator set, quantization and reference interpreter.
