#!/usr/bin/env bash
# Regenerates src/schema_generated.rs from the official TFLite flatbuffers schema
# (default ../shared/specs/tflite/schema.fbs next to the repository; FLATC and SCHEMA
# override flatc and the schema, see tools/gen-schema.sh).
# Usage (from anywhere):  frontend-tflite/generate.sh
exec "$(dirname "${BASH_SOURCE[0]}")/../tools/gen-schema.sh" frontend-tflite \
    ../shared/specs/tflite/schema.fbs schema_generated.rs \
    "the TFLite schema (file identifier TFL3)"
