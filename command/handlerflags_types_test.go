package command

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// --types takes TYPE or TYPE=W; a bad weight names the fix.
func TestParseTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      []string
		types   []string
		weights map[string]int
		err     string
	}{
		{in: []string{"a,b"}, types: []string{"a", "b"}},
		{in: []string{"a=6,b=3", "c"}, types: []string{"a", "b", "c"}, weights: map[string]int{"a": 6, "b": 3}},
		{in: []string{"a, a=2"}, types: []string{"a"}, weights: map[string]int{"a": 2}},
		{in: []string{"a=0"}, err: "the weight must be a whole number >= 1"},
		{in: []string{"a=x"}, err: "the weight must be a whole number >= 1"},
		{in: []string{"a=1,a=2"}, err: `weighs type "a" twice`},
		{in: []string{"=3"}, err: "invalid --types"},
	}
	for _, tc := range tests {
		types, weights, err := parseTypes(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, "%v", tc.in)
			continue
		}
		require.NoError(t, err, "%v", tc.in)
		require.Equal(t, tc.types, types, "%v", tc.in)
		require.Equal(t, tc.weights, weights, "%v", tc.in)
	}
}
