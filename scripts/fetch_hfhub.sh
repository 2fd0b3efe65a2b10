#!/bin/sh
# @huggingface/hub 2.17.5, the Hub's own JavaScript client, which
# mount.real_clients runs against tests/mount/hubserver.py; installed once
# with npm into DIR (not globally). Prints the path of its package folder.
# Exits 77 (the tests' skip code) when npm is missing or the registry
# cannot be reached, so that the test says so and goes on without it.
exec "${0%/*}/fetch_npm.sh" fetch_hfhub @huggingface/hub@2.17.5 \
    "${1:?usage: fetch_hfhub.sh DIR}" node_modules/@huggingface/hub
