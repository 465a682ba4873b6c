package command

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseSecondsOrDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30": 30 * time.Second, "0.5": 500 * time.Millisecond, "250ms": 250 * time.Millisecond, "2m": 2 * time.Minute, "0": 0,
	} {
		got, err := parseSecondsOrDuration(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := parseSecondsOrDuration("soon")
	require.Error(t, err)
}
