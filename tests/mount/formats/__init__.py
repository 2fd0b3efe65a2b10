"""The per-format table of test_formats.py: one file per format, NAME.py,
each with DIRS (its models' folders: "gen/..." under the generated models,
"shared/..." under ../shared) and, where the format needs them, its own
checks: check_model(c, t, model, expect, mount) for each model of DIRS
(mount() gives the runner's mount point of it), EXTRAS (functions (c, t)
over files they write themselves) and setup(c, t). tests/README.md says
how to add one."""
