"""TensorBuffers (.tb): the generic checks and the .npy twins of
scripts/gen_tb.py's models and ../shared's (their layout against an
independent reader: formats.ptd_tb; mutants: mount.malformed)."""
DIRS = ("gen/tb", "shared/fixtures/tensorbuffers")
