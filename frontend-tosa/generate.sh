#!/usr/bin/env bash
# Regenerates src/schema_generated.rs from the official TOSA flatbuffers schema
# (default ../shared/specs/tosa/tosa.fbs next to the repository; FLATC and SCHEMA
# override flatc and the schema, see tools/gen-schema.sh).
# Usage (from anywhere):  frontend-tosa/generate.sh
exec "$(dirname "${BASH_SOURCE[0]}")/../tools/gen-schema.sh" frontend-tosa \
    ../shared/specs/tosa/tosa.fbs tosa_generated.rs \
    "the TOSA schema (file identifier TOSA)"
