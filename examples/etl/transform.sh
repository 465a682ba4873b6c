#!/bin/sh
# A transform step: its input is {"op": ..., "rows": [...]}, the rows coming
# from extract's output (input_from). A real one would change them; this
# one prints its input back as its output.
cat
