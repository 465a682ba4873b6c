package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// subtract keeps the time of a outside b, each sorted and disjoint.
func TestSubtract(t *testing.T) {
	t.Parallel()
	s := func(from, to time.Duration) span { return span{from, to} }
	for _, tc := range []struct {
		name    string
		a, b    []span
		want    []span
		wantLen time.Duration
	}{
		{"nothing taken", []span{s(0, 10)}, nil, []span{s(0, 10)}, 10},
		{"a hole", []span{s(0, 10)}, []span{s(3, 5)}, []span{s(0, 3), s(5, 10)}, 8},
		{"both ends", []span{s(0, 10), s(20, 30)}, []span{s(-5, 2), s(8, 22), s(29, 40)}, []span{s(2, 8), s(22, 29)}, 13},
		{"all of it", []span{s(0, 10)}, []span{s(0, 10)}, nil, 0},
		{"open end", []span{s(0, forever)}, []span{s(5, 7)}, []span{s(0, 5), s(7, forever)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := subtract(tc.a, tc.b)
			require.Equal(t, tc.want, got)
			if tc.wantLen > 0 {
				require.Equal(t, tc.wantLen, within(got, -time.Hour, time.Hour))
			}
		})
	}
}
