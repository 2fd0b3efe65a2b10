"""RTen: the generic checks and the .npy twins of scripts/gen_rten.py's
models and ../shared's (their flatbuffers against flatc: formats.rten_flatc;
mutants: mount.malformed)."""
DIRS = ("gen/rten", "shared/fixtures/rten")
