package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
)

// Contention parameters of the race tests. In -short mode the rounds are
// fewer; CI runs the full suite.
const (
	raceWriters = 20
	raceRounds  = 50
	shortRounds = 8

	tornReaders     = 4
	tornWrites      = 60
	tornShortWrites = 15
)

func rounds() int {
	if testing.Short() {
		return shortRounds
	}
	return raceRounds
}

// raceResult is one writer's outcome in a round.
type raceResult struct {
	etag string
	err  error
}

// race runs writers concurrently, released together, and returns their
// results.
func race(n int, write func(i int) (string, error)) []raceResult {
	results := make([]raceResult, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			etag, err := write(i)
			results[i] = raceResult{etag, err}
		}()
	}
	close(start)
	wg.Wait()
	return results
}

// oneWinner checks that exactly one writer won and every other one got
// ErrPreconditionFailed; it returns the winner.
func oneWinner(t *testing.T, round int, results []raceResult) int {
	t.Helper()
	winner := -1
	for i, r := range results {
		if r.err == nil {
			require.Equal(t, -1, winner, "round %d: writers %d and %d both won", round, winner, i)
			winner = i
			continue
		}
		require.ErrorIs(t, r.err, store.ErrPreconditionFailed, "round %d: writer %d lost with the wrong error", round, i)
	}
	require.NotEqual(t, -1, winner, "round %d: no writer won", round)
	return winner
}

func testCreateOnlyRace(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	for round := range rounds() {
		key := fmt.Sprintf("corace/%03d", round)
		results := race(raceWriters, func(i int) (string, error) {
			res, err := s.Put(ctx, key, fmt.Appendf(nil, "round %d writer %d", round, i), store.CreateOnly)
			return res.ETag, err
		})
		w := oneWinner(t, round, results)
		obj, err := s.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("round %d writer %d", round, w), string(obj.Body), "round %d: the winner's body is stored", round)
		require.Equal(t, results[w].etag, obj.ETag)
	}
}

func testIfMatchRace(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	key := "imrace/task.json"
	res, err := s.Put(ctx, key, []byte("round -1"), store.CreateOnly)
	require.NoError(t, err)
	etag := res.ETag
	for round := range rounds() {
		results := race(raceWriters, func(i int) (string, error) {
			res, err := s.Put(ctx, key, fmt.Appendf(nil, "round %d writer %d", round, i), store.IfMatch(etag))
			return res.ETag, err
		})
		w := oneWinner(t, round, results)
		obj, err := s.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("round %d writer %d", round, w), string(obj.Body), "round %d: the winner's body is stored", round)
		require.Equal(t, results[w].etag, obj.ETag)
		etag = obj.ETag
	}
	versions, err := s.ListVersions(ctx, key)
	require.NoError(t, err)
	require.Len(t, versions, rounds()+1, "one version per winning write, none for the losers")
}

func testNoTornReads(t *testing.T, s store.Store) {
	writes := tornWrites
	if testing.Short() {
		writes = tornShortWrites
	}
	bad, reads, err := tornReads(ctxFor(t), s, "torn/task.json", writes, tornReaders)
	require.NoError(t, err)
	require.NotZero(t, reads)
	require.Empty(t, bad[:min(len(bad), 5)], "%d of %d GETs during %d chained If-Match PUTs were inconsistent (the first ones shown)", len(bad), reads, writes)
}

// tornReads writes key writes times, each PUT presenting the ETag the
// previous one returned, while readers goroutines GET it until the writes
// are done, and once more after. It returns what was wrong with the GETs
// (empty on a conforming store) and how many there were. A GET is wrong
// when its body and ETag come from different writes (a torn read, which
// lets a compare-and-swap succeed on a stale read), when its ETag is none
// a PUT returned, or when it returns a write older than one whose PUT had
// returned before the GET was sent. err reports a request that failed.
func tornReads(ctx context.Context, s store.Store, key string, writes, readers int) (bad []string, reads int, err error) {
	pad := strings.Repeat("q", 1<<10)
	bodyOf := func(seq int) []byte { return fmt.Appendf(nil, `{"seq":%d,"pad":%q}`, seq, pad) }
	res, err := s.Put(ctx, key, bodyOf(0), store.Condition{})
	if err != nil {
		return nil, 0, fmt.Errorf("first write: %w", err)
	}
	type read struct {
		floor int // the newest write whose PUT had returned when the GET was sent
		seq   int // the write the body names (-1: none)
		etag  string
	}
	var (
		mu       sync.Mutex
		seqOf    = map[string]int{res.ETag: 0}
		returned int
		all      []read
		readErr  error
		wg       sync.WaitGroup
	)
	done := make(chan struct{})
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				last := false
				select {
				case <-done:
					last = true // one read of the last write
				default:
				}
				mu.Lock()
				floor := returned
				mu.Unlock()
				obj, err := s.Get(ctx, key)
				mu.Lock()
				if err != nil {
					if readErr == nil {
						readErr = err
					}
					mu.Unlock()
					return
				}
				r := read{floor: floor, seq: -1, etag: obj.ETag}
				var b struct {
					Seq *int `json:"seq"`
				}
				if json.Unmarshal(obj.Body, &b) == nil && b.Seq != nil {
					r.seq = *b.Seq
				}
				all = append(all, r)
				mu.Unlock()
				if last {
					return
				}
			}
		}()
	}
	etag := res.ETag
	var writeErr error
	for i := 1; i <= writes; i++ {
		res, err := s.Put(ctx, key, bodyOf(i), store.IfMatch(etag))
		if err != nil {
			writeErr = fmt.Errorf("write %d (If-Match the ETag write %d returned): %w", i, i-1, err)
			break
		}
		mu.Lock()
		seqOf[res.ETag], returned = i, i
		mu.Unlock()
		etag = res.ETag
	}
	close(done)
	wg.Wait()
	if writeErr != nil {
		return nil, len(all), writeErr
	}
	if readErr != nil {
		return nil, len(all), fmt.Errorf("GET during the writes: %w", readErr)
	}
	for _, r := range all {
		seq, known := seqOf[r.etag]
		switch {
		case r.seq < 0:
			bad = append(bad, fmt.Sprintf("a body that is none of the writes, ETag %s", r.etag))
		case !known:
			bad = append(bad, fmt.Sprintf("the body of write %d with ETag %s, which no write returned", r.seq, r.etag))
		case seq != r.seq:
			bad = append(bad, fmt.Sprintf("the body of write %d with the ETag of write %d (torn)", r.seq, seq))
		case r.seq < r.floor:
			bad = append(bad, fmt.Sprintf("write %d, sent after write %d had returned (stale)", r.seq, r.floor))
		}
	}
	return bad, len(all), nil
}
