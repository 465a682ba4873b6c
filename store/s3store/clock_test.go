package s3store

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
)

func TestOffsetEstimate(t *testing.T) {
	t.Parallel()
	base := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	at := func(d time.Duration) time.Time { return base.Add(d) }
	ms := time.Millisecond

	type sample struct {
		sent, received time.Duration // local, relative to base
		date           time.Duration // server Date, relative to base (whole seconds)
	}
	tests := []struct {
		name    string
		samples []sample
		ok      bool
		lo, hi  time.Duration
	}{
		{
			name: "none",
		},
		{
			// Server clock equal to ours, a 10 ms round trip.
			name:    "one response",
			samples: []sample{{sent: 400 * ms, received: 410 * ms, date: 0}},
			ok:      true,
			lo:      -410 * ms, hi: 1600 * ms,
		},
		{
			// The second response came back just after the server's second
			// ticked: the interval narrows from below.
			name: "two responses narrow the interval",
			samples: []sample{
				{sent: 400 * ms, received: 410 * ms, date: 0},
				{sent: 990 * ms, received: 1010 * ms, date: time.Second},
			},
			ok: true,
			// The first interval widened by 500 ppm of 600 ms first.
			lo: -10 * ms, hi: 1600*ms + 300*time.Microsecond,
		},
		{
			name: "server 5 s ahead",
			samples: []sample{
				{sent: 100 * ms, received: 120 * ms, date: 5 * time.Second},
				{sent: 950 * ms, received: 970 * ms, date: 6 * time.Second},
			},
			ok: true,
			lo: 5030 * ms, hi: 6900*ms + 425*time.Microsecond,
		},
		{
			name: "server 3 s behind",
			samples: []sample{
				{sent: 0, received: 30 * ms, date: -3 * time.Second},
			},
			ok: true,
			lo: -3*time.Second - 30*ms, hi: -time.Second,
		},
		{
			// The local clock jumped back an hour between the responses:
			// the old interval is inconsistent with the new one, so the
			// estimate restarts from the newest response.
			name: "clock jump resets",
			samples: []sample{
				{sent: 400 * ms, received: 410 * ms, date: 0},
				{sent: -time.Hour + 500*ms, received: -time.Hour + 520*ms, date: 0},
			},
			ok: true,
			lo: time.Hour - 520*ms, hi: time.Hour + 1500*ms,
		},
		{
			name: "received before sent is ignored",
			samples: []sample{
				{sent: 400 * ms, received: 410 * ms, date: 0},
				{sent: 500 * ms, received: 100 * ms, date: 7 * time.Second},
			},
			ok: true,
			lo: -410 * ms, hi: 1600 * ms,
		},
		{
			// An hour later the kept interval has widened by the drift
			// allowance (500 ppm of 3600 s = 1.8 s) before intersecting.
			name: "drift allowance",
			samples: []sample{
				{sent: 0, received: 0, date: 0},                                                       // [0, 2s]
				{sent: time.Hour, received: time.Hour, date: time.Hour - 2*time.Second},               // [-2s, 0]
				{sent: time.Hour + 10*ms, received: time.Hour + 10*ms, date: time.Hour - time.Second}, // [-1.01s, 0.99s]
			},
			ok: true,
			// Without the allowance the first two would intersect in [0, 0]
			// and the third would reset the estimate.
			lo: -1010 * ms, hi: 5 * time.Microsecond,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var e offsetEstimate
			for _, s := range tc.samples {
				e = e.add(clockSample{sent: at(s.sent), received: at(s.received), date: at(s.date)})
			}
			require.Equal(t, tc.ok, e.ok)
			if !tc.ok {
				return
			}
			require.Equal(t, tc.lo, e.lo, "lo")
			require.Equal(t, tc.hi, e.hi, "hi")
			off, unc := e.offset()
			require.Equal(t, tc.lo+(tc.hi-tc.lo)/2, off)
			require.Equal(t, (tc.hi-tc.lo)/2, unc)
		})
	}
}

// TestOffsetEstimateConverges feeds responses from a server whose clock is
// 2.345 s ahead, both from a server that stamps the exact second and from
// servers that serve a Date cached by a once-a-second ticker (refreshed at
// the given phase after each second): the true offset must stay inside the
// interval at every step, and the interval must shrink to what the header
// allows (about one second wide).
func TestOffsetEstimateConverges(t *testing.T) {
	t.Parallel()
	const trueOffset = 2345 * time.Millisecond
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, phase := range []time.Duration{0, 300 * time.Millisecond, 990 * time.Millisecond} {
		var e offsetEstimate
		for i := range 200 {
			sent := base.Add(time.Duration(i) * 37 * time.Millisecond)
			serverAt := sent.Add(2 * time.Millisecond).Add(trueOffset)
			received := sent.Add(5 * time.Millisecond)
			date := serverAt.Add(-phase).Truncate(time.Second) // the value the cache holds
			e = e.add(clockSample{sent: sent, received: received, date: date})
			require.True(t, e.lo <= trueOffset && trueOffset <= e.hi, "phase %v, sample %d: %v not in [%v, %v]", phase, i, trueOffset, e.lo, e.hi)
		}
		off, unc := e.offset()
		require.Less(t, unc, 520*time.Millisecond, "phase %v", phase)
		require.Less(t, (off - trueOffset).Abs(), time.Second, "phase %v", phase)
	}
}

func TestServerClockObserve(t *testing.T) {
	t.Parallel()
	c := serverClock{now: time.Now}
	_, _, ok := c.estimate()
	require.False(t, ok)

	sent := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c.observe(sent, sent.Add(time.Millisecond), http.Header{})
	c.observe(sent, sent.Add(time.Millisecond), http.Header{"Date": {"yesterday"}})
	_, _, ok = c.estimate()
	require.False(t, ok, "missing and malformed Date headers are ignored")

	c.observe(sent, sent.Add(time.Millisecond), http.Header{"Date": {"Tue, 01 Jan 2030 00:00:10 GMT"}})
	off, unc, ok := c.estimate()
	require.True(t, ok)
	require.InDelta(t, float64(11*time.Second), float64(off), float64(time.Millisecond))
	require.InDelta(t, float64(time.Second), float64(unc), float64(time.Millisecond))
}

func TestServerClockNeverStepsBack(t *testing.T) {
	t.Parallel()
	local := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	now := local
	c := serverClock{now: func() time.Time { return now }}
	_, ok := c.read()
	require.False(t, ok, "no response seen yet")

	date := http.Header{"Date": {"Tue, 01 Jan 2030 00:00:10 GMT"}}
	c.observe(local, local.Add(time.Millisecond), date) // offset in [9.999s, 12s]
	now = local.Add(600 * time.Millisecond)
	first, ok := c.read()
	require.True(t, ok)
	require.Equal(t, now.Add(11*time.Second-time.Millisecond/2), first)

	// A later response narrows the interval to [9.999s, 11.5s]: its
	// midpoint moves back by 250 ms.
	c.observe(local.Add(500*time.Millisecond), local.Add(501*time.Millisecond), date)
	off, _, _ := c.estimate()
	require.Less(t, now.Add(off), first, "the estimate alone moved back")
	got, _ := c.read()
	require.Equal(t, first, got, "the time read holds instead of going back")

	now = local.Add(time.Second)
	got, _ = c.read()
	require.Equal(t, now.Add(off), got, "and moves on once the clock passes it")

	// A server clock set back an hour: the estimate restarts and the time
	// read follows it.
	c.observe(now, now.Add(time.Millisecond), http.Header{"Date": {"Mon, 31 Dec 2029 23:00:11 GMT"}})
	got, _ = c.read()
	require.Less(t, got, first.Add(-50*time.Minute))
}

func TestVersionOrder(t *testing.T) {
	t.Parallel()
	doc := `<?xml version="1.0" encoding="UTF-8"?>
<ListVersionsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>b</Name><Prefix>k</Prefix>
  <DeleteMarker><Key>k</Key><VersionId>v4</VersionId><IsLatest>true</IsLatest></DeleteMarker>
  <Version><Key>k</Key><VersionId>v3</VersionId><IsLatest>false</IsLatest><Owner><ID>x</ID></Owner></Version>
  <DeleteMarker><Key>k</Key><VersionId>v2</VersionId></DeleteMarker>
  <Version><Key>k</Key><VersionId>v1</VersionId></Version>
  <NextVersionIdMarker>v0</NextVersionIdMarker>
</ListVersionsResult>`
	order, body, err := versionOrder(nopCloser(doc))
	require.NoError(t, err)
	require.Equal(t, doc, string(body))
	require.Equal(t, []string{"v4", "v3", "v2", "v1"}, order)

	_, body, err = versionOrder(nopCloser("<broken"))
	require.Error(t, err)
	require.Equal(t, "<broken", string(body), "the body survives for the SDK's own error")
}

func TestLifecycleRulesValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []store.LifecycleRule
		want string
	}{
		{"no id", []store.LifecycleRule{{Prefix: "p/", NoncurrentDays: 1}}, "no id"},
		{"duplicate id", []store.LifecycleRule{{ID: "a", NoncurrentDays: 1}, {ID: "a", ExpiredDeleteMarkers: true}}, "two rules"},
		{"negative days", []store.LifecycleRule{{ID: "a", NoncurrentDays: -1}}, "negative"},
		{"no action", []store.LifecycleRule{{ID: "a", Prefix: "p/"}}, "no action"},
		{"ok", []store.LifecycleRule{{ID: "a", Prefix: "p/", ExpiredDeleteMarkers: true}, {ID: "b", NoncurrentDays: 3}}, ""},
	}
	for _, tc := range tests {
		out, err := lifecycleRules(tc.in)
		if tc.want != "" {
			require.ErrorContains(t, err, tc.want, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Len(t, out, len(tc.in))
		require.Equal(t, "p/", *out[0].Filter.Prefix)
		require.True(t, *out[0].Expiration.ExpiredObjectDeleteMarker)
		require.Nil(t, out[0].NoncurrentVersionExpiration)
		require.Equal(t, int32(3), *out[1].NoncurrentVersionExpiration.NoncurrentDays)
		require.Nil(t, out[1].Expiration)
	}
}

func nopCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }

func TestOrderVersions(t *testing.T) {
	t.Parallel()
	ts := func(sec int) time.Time { return time.Date(2030, 1, 1, 0, 0, sec, 0, time.UTC) }
	v := func(id string, latest, marker bool, sec int) store.Version {
		return store.Version{Key: "k", VersionID: id, IsLatest: latest, DeleteMarker: marker, LastModified: ts(sec)}
	}
	ids := func(vs []store.Version) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.VersionID)
		}
		return out
	}
	tests := []struct {
		name  string
		in    []store.Version // as the SDK hands them: versions, then markers
		order []string        // document order
		want  []string
	}{
		{
			name:  "document order (AWS, MinIO)",
			in:    []store.Version{v("a", true, false, 5), v("c", false, false, 5), v("b", false, true, 5)},
			order: []string{"a", "b", "c"},
			want:  []string{"a", "b", "c"},
		},
		{
			// versitygw: markers first in the document, ids are ULIDs.
			name: "ULIDs (versitygw)",
			in: []store.Version{
				v("01M82MRN9H8X31F1KM6BVVQD0Z", true, false, 8),
				v("01M82MRN9244B22TKZKWZWVAAJ", false, false, 8),
				v("01M82MRN99CPT6FPY9F0XKBYKT", false, true, 9),
			},
			order: []string{"01M82MRN99CPT6FPY9F0XKBYKT", "01M82MRN9H8X31F1KM6BVVQD0Z", "01M82MRN9244B22TKZKWZWVAAJ"},
			want:  []string{"01M82MRN9H8X31F1KM6BVVQD0Z", "01M82MRN99CPT6FPY9F0XKBYKT", "01M82MRN9244B22TKZKWZWVAAJ"},
		},
		{
			name: "no document order: latest, then time",
			in:   []store.Version{v("x", false, false, 1), v("y", false, true, 3), v("z", true, false, 2)},
			want: []string{"z", "y", "x"},
		},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, ids(orderVersions(tc.in, tc.order)), tc.name)
	}

	require.True(t, isULID("01M82MRN9H8X31F1KM6BVVQD0Z"))
	for _, id := range []string{"", "null", "8796f6b1-4894-4e66-9d21-e5dab11289ac", "81M82MRN9H8X31F1KM6BVVQD0Z", "01M82MRN9H8X31F1KM6BVVQD0U", "01m82mrn9h8x31f1km6bvvqd0z", "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY"} {
		require.False(t, isULID(id), id)
	}
}
