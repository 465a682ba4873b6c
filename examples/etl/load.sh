#!/bin/sh
# The load step: its input holds the three transforms' outputs (input_from).
# It prints what it loaded.
echo "load: loading into the daily table" >&2
cat
