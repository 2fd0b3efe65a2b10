#!/bin/sh
# s3rver 3.7.1, the S3 server mount.s3 also reads models from, installed
# once with npm into DIR (not globally); prints the path of its program.
# Exits 77 (the tests' skip code) when npm is missing or the registry
# cannot be reached, so that the test says so and goes on without it.
exec "${0%/*}/fetch_npm.sh" fetch_s3rver s3rver@3.7.1 "${1:?usage: fetch_s3rver.sh DIR}" \
    node_modules/.bin/s3rver
