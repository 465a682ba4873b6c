package throughput

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// TestHourFold: a worker's count of a minute is kept once, at
// its largest; a closed minute keeps its total and takes no more.
func TestHourFold(t *testing.T) {
	t.Parallel()
	hour := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	h := &Hour{Hour: hour}
	m := func(min, done, failed int) queue.MinuteCount {
		return queue.MinuteCount{Start: hour.Add(time.Duration(min) * time.Minute), Completed: done, Failed: failed}
	}
	require.True(t, h.Fold("a", m(5, 3, 1)))
	require.False(t, h.Fold("a", m(5, 3, 1)), "the same heartbeat read again")
	require.False(t, h.Fold("a", m(5, 2, 0)), "a smaller count is an older reading")
	require.True(t, h.Fold("a", m(5, 7, 1)))
	require.True(t, h.Fold("b", m(5, 1, 0)))
	require.True(t, h.Fold("a", m(2, 4, 0)))
	require.False(t, h.Fold("a", m(9, 0, 0)), "an empty minute is not stored")
	require.Len(t, h.Minutes, 2)
	require.Equal(t, m(2, 4, 0), h.Minutes[0].MinuteCount, "minutes oldest first")
	require.Equal(t, m(5, 8, 1), h.Minutes[1].MinuteCount)

	require.True(t, h.Close(hour.Add(3*time.Minute)))
	require.Nil(t, h.Minutes[0].Workers)
	require.NotNil(t, h.Minutes[1].Workers)
	require.False(t, h.Fold("c", m(2, 9, 9)), "a closed minute takes no more")
	require.Equal(t, m(2, 4, 0), h.Minutes[0].MinuteCount)
}

func TestThroughputKey(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 1, 12, 59, 59, 0, time.FixedZone("x", 3600))
	key := Key(at)
	require.Equal(t, "monitor/throughput/2030-01-01T11.json", key)
	hour, err := ParseKey(key)
	require.NoError(t, err)
	require.Equal(t, time.Date(2030, 1, 1, 11, 0, 0, 0, time.UTC), hour)
	_, err = ParseKey("monitor/throughput/nope.json")
	require.Error(t, err)
	_, err = Decode(key, []byte(`{"format":1,"hour":"2030-01-01T10:00:00Z"}`))
	require.ErrorContains(t, err, "object says hour")
	_, err = Decode(key, []byte(`[`))
	var bad *queue.MalformedError
	require.ErrorAs(t, err, &bad)
}
