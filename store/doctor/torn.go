package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qo-queue/qo/store"
)

// The torn-reads probe: tornWrites chained If-Match PUTs of one key while
// tornReaders readers GET it, about tornReadsPerWrite GETs per write and
// tornMaxReads in all (plus one read each of the last write). A server
// that tears reads under concurrent writes (versitygw with sidecar
// metadata tore about a third of them here) fails in its first few reads;
// the whole probe takes a few hundred milliseconds on a local server.
const (
	tornWrites        = 12
	tornReaders       = 2
	tornPadBytes      = 4 << 10
	tornReadsPerWrite = 6
	tornMaxReads      = 60
)

// pause waits d, or until done is closed (false).
func pause(done <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return false
	case <-t.C:
		return true
	}
}

// tornRead is one GET of the torn-reads probe.
type tornRead struct {
	etag string
	seq  int  // the write the body names
	ok   bool // the body named one
}

// tornPad lengthens the probe bodies: the longer a write takes, the more
// reads overlap it.
var tornPad = strings.Repeat("q", tornPadBytes)

func tornBody(seq int) string {
	return fmt.Sprintf(`{"qo_doctor":"torn-read","seq":%d,"nonce":%q,"pad":%q}`, seq, randomHex(8), tornPad)
}

// checkTornReads runs the torn-reads probe: every GET must return the
// body and the ETag of the same write. qo's compare-and-swap presents the
// ETag of the body it decided on; a server that pairs an old body with a
// new ETag lets a worker claim a task it read as pending although another
// worker claimed it meanwhile.
func (d *doctor) checkTornReads(ctx context.Context) {
	key := d.prefix + "torn-read.json"
	b0 := tornBody(0)
	start := d.opts.Now()
	first, err := d.put(ctx, key, b0, store.Condition{})
	tookFirst := d.opts.Now().Sub(start)
	if err != nil {
		d.add(CheckTornReads, StatusFail, "writing the probe failed: "+err.Error(), notSupportedFix(err))
		return
	}
	writes := []probeWrite{{first.ETag, b0}}
	seqOf := map[string]int{first.ETag: 0}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	var (
		mu      sync.Mutex
		reads   []tornRead
		readErr error
		wg      sync.WaitGroup
	)
	// The server as it answers: a store that checks its reads would hide
	// the tears this probe looks for.
	read := d.s.Get
	if u, ok := d.s.(store.UncheckedGetter); ok {
		read = u.GetUnchecked
	}
	get := func() bool {
		obj, err := read(ctx, key)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if readErr == nil && ctx.Err() == nil {
				readErr = err
			}
			return false
		}
		var b struct {
			Seq *int `json:"seq"`
		}
		r := tornRead{etag: obj.ETag}
		if json.Unmarshal(obj.Body, &b) == nil && b.Seq != nil {
			r.seq, r.ok = *b.Seq, true
		}
		reads = append(reads, r)
		return true
	}
	// The readers spread their GETs over each write, tornReadsPerWrite
	// in all (the pause between two GETs of a reader is a fraction of the
	// last PUT's duration, measured), since a server may tear only in one
	// stretch of a write; then each reads the last write once more.
	var putTook atomic.Int64 // nanoseconds
	putTook.Store(int64(tookFirst))
	for r := range tornReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gap := func() time.Duration { return time.Duration(putTook.Load()) * tornReaders / tornReadsPerWrite }
			if !pause(done, gap()*time.Duration(r)/tornReaders) { // readers take turns
				get()
				return
			}
			for {
				mu.Lock()
				spent := len(reads) >= tornMaxReads
				mu.Unlock()
				if spent {
					<-done
				}
				select {
				case <-done:
					get()
					return
				default:
				}
				if !get() {
					return
				}
				if !pause(done, gap()) {
					get()
					return
				}
			}
		}()
	}
	prev := first.ETag
	var writeErr error
	for i := 1; i <= tornWrites; i++ {
		b := tornBody(i)
		start := d.opts.Now()
		res, err := d.s.Put(ctx, key, []byte(b), store.IfMatch(prev))
		putTook.Store(int64(d.opts.Now().Sub(start)))
		if err != nil {
			writeErr = err
			break
		}
		mu.Lock()
		seqOf[res.ETag] = i
		mu.Unlock()
		writes = append(writes, probeWrite{res.ETag, b})
		prev = res.ETag
	}
	close(done)
	if writeErr != nil {
		cancel() // the readers' verdict no longer matters
	}
	wg.Wait()
	if len(writes) >= 3 {
		d.verKey, d.verWrites = key, writes
	}

	switch {
	case errors.Is(writeErr, store.ErrPreconditionFailed):
		d.add(CheckTornReads, StatusFail, fmt.Sprintf("a PUT presenting the ETag the previous PUT returned was refused (write %d of %d): ETags are not stable", len(writes), tornWrites+1), unsafeProvider)
		return
	case writeErr != nil:
		d.add(CheckTornReads, StatusFail, fmt.Sprintf("chained If-Match PUT %d of %d failed: %v", len(writes), tornWrites+1, writeErr), notSupportedFix(writeErr))
		return
	case readErr != nil:
		d.add(CheckTornReads, StatusFail, "GET during writes failed: "+readErr.Error(), permFix(readErr, "s3:GetObject"))
		return
	}
	// A body older than its ETag's write is the dangerous tear: a
	// compare-and-swap decided on the old body succeeds. A body newer than
	// its ETag only makes the compare-and-swap fail (a lost race).
	var torn, lagging int
	example, lagExample := "", ""
	for _, r := range reads {
		seq, known := seqOf[r.etag]
		switch {
		case known && r.ok && seq == r.seq:
		case known && r.ok && r.seq > seq:
			lagging++
			if lagExample == "" {
				lagExample = fmt.Sprintf("the body of write %d with the ETag of write %d", r.seq, seq)
			}
		default:
			torn++
			if example != "" {
				continue
			}
			switch {
			case !r.ok:
				example = fmt.Sprintf("a body that is none of the writes with ETag %s", r.etag)
			case !known:
				example = fmt.Sprintf("the body of write %d with ETag %s, which no write returned", r.seq, r.etag)
			default:
				example = fmt.Sprintf("the body of write %d with the ETag of write %d", r.seq, seq)
			}
		}
	}
	fix := "use a server that returns an object's body and ETag from the same write (see " + ProvidersDoc + "), or report the bug to this one"
	switch {
	case torn > 0:
		d.add(CheckTornReads, StatusFail,
			fmt.Sprintf("%d of %d GETs during %d chained If-Match PUTs returned a body and an ETag of different writes (e.g. %s): "+
				"a worker that reads a task as pending with the ETag of a newer write claims it anyway, and the task runs twice",
				torn, len(reads), tornWrites, example), fix)
		return
	case lagging > 0:
		d.add(CheckTornReads, StatusWarn,
			fmt.Sprintf("%d of %d GETs during %d chained If-Match PUTs returned a body with the ETag of the write before it (e.g. %s): "+
				"safe for qo (a write based on such a read fails as a lost race and is retried), but the server is not consistent",
				lagging, len(reads), tornWrites, lagExample), fix)
		return
	}
	d.add(CheckTornReads, StatusOK, fmt.Sprintf("%d GETs during %d chained If-Match PUTs each returned the body and the ETag of one write", len(reads), tornWrites), "")
}
