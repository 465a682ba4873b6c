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

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := newTornProbe(d.s, key, first.ETag, tookFirst)
	p.startReaders(ctx)
	writes, writeErr := d.chainTornWrites(ctx, p, probeWrite{first.ETag, b0})
	close(p.done)
	if writeErr != nil {
		cancel() // the readers' verdict no longer matters
	}
	p.wg.Wait()
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
	case p.readErr != nil:
		d.add(CheckTornReads, StatusFail, "GET during writes failed: "+p.readErr.Error(), permFix(p.readErr, "s3:GetObject"))
		return
	}
	d.judgeTornReads(p.reads, p.seqOf)
}

// tornProbe is the readers' side of the torn-reads probe: the GETs of key
// made while the chained writes go on, and the write each ETag came from.
type tornProbe struct {
	key     string
	read    func(ctx context.Context, key string) (*store.Object, error)
	done    chan struct{} // closed when the writes are over
	putTook atomic.Int64  // the last PUT's duration, in nanoseconds
	wg      sync.WaitGroup

	mu      sync.Mutex
	reads   []tornRead
	readErr error
	seqOf   map[string]int
}

// newTornProbe returns the probe of key, whose first write returned
// firstETag and took tookFirst.
func newTornProbe(s store.Store, key, firstETag string, tookFirst time.Duration) *tornProbe {
	p := &tornProbe{key: key, done: make(chan struct{}), seqOf: map[string]int{firstETag: 0}}
	// The server as it answers: a store that checks its reads would hide
	// the tears this probe looks for.
	p.read = s.Get
	if u, ok := s.(store.UncheckedGetter); ok {
		p.read = u.GetUnchecked
	}
	p.putTook.Store(int64(tookFirst))
	return p
}

// get makes one GET and records what it returned; false when it failed.
func (p *tornProbe) get(ctx context.Context) bool {
	obj, err := p.read(ctx, p.key)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.readErr == nil && ctx.Err() == nil {
			p.readErr = err
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
	p.reads = append(p.reads, r)
	return true
}

// startReaders starts the readers. They spread their GETs over each
// write, tornReadsPerWrite in all (the pause between two GETs of a reader
// is a fraction of the last PUT's duration, measured), since a server may
// tear only in one stretch of a write; then each reads the last write once
// more.
func (p *tornProbe) startReaders(ctx context.Context) {
	for r := range tornReaders {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.reader(ctx, r)
		}()
	}
}

// reader is the r-th reader's loop (see startReaders).
func (p *tornProbe) reader(ctx context.Context, r int) {
	gap := func() time.Duration { return time.Duration(p.putTook.Load()) * tornReaders / tornReadsPerWrite }
	if !pause(p.done, gap()*time.Duration(r)/tornReaders) { // readers take turns
		p.get(ctx)
		return
	}
	for {
		p.mu.Lock()
		spent := len(p.reads) >= tornMaxReads
		p.mu.Unlock()
		if spent {
			<-p.done
		}
		select {
		case <-p.done:
			p.get(ctx)
			return
		default:
		}
		if !p.get(ctx) {
			return
		}
		if !pause(p.done, gap()) {
			p.get(ctx)
			return
		}
	}
}

// chainTornWrites makes the probe's tornWrites If-Match PUTs, each
// presenting the ETag the one before returned, and returns the writes
// made (from first) and the error that stopped them.
func (d *doctor) chainTornWrites(ctx context.Context, p *tornProbe, first probeWrite) ([]probeWrite, error) {
	writes := []probeWrite{first}
	prev := first.etag
	for i := 1; i <= tornWrites; i++ {
		b := tornBody(i)
		start := d.opts.Now()
		res, err := d.s.Put(ctx, p.key, []byte(b), store.IfMatch(prev))
		p.putTook.Store(int64(d.opts.Now().Sub(start)))
		if err != nil {
			return writes, err
		}
		p.mu.Lock()
		p.seqOf[res.ETag] = i
		p.mu.Unlock()
		writes = append(writes, probeWrite{res.ETag, b})
		prev = res.ETag
	}
	return writes, nil
}

// judgeTornReads reports the probe's reads, given the write each ETag came
// from. A body older than its ETag's write is the dangerous tear: a
// compare-and-swap decided on the old body succeeds. A body newer than
// its ETag only makes the compare-and-swap fail (a lost race).
func (d *doctor) judgeTornReads(reads []tornRead, seqOf map[string]int) {
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
			if example == "" {
				example = tornExample(r, seq, known)
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

// tornExample describes the torn read r, whose ETag came from write seq
// (when known).
func tornExample(r tornRead, seq int, known bool) string {
	switch {
	case !r.ok:
		return fmt.Sprintf("a body that is none of the writes with ETag %s", r.etag)
	case !known:
		return fmt.Sprintf("the body of write %d with ETag %s, which no write returned", r.seq, r.etag)
	default:
		return fmt.Sprintf("the body of write %d with the ETag of write %d", r.seq, seq)
	}
}
