//go:build !nogateway

package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store/gateway"
)

// tornCount is what readers saw while a writer rewrote one key.
type tornCount struct {
	reads atomic.Int64
	// older: a body older than its ETag (the ETag of a later write): the
	// read a stale compare-and-swap wins with.
	older atomic.Int64
	// newer: a body newer than its ETag (a stale ETag, whose If-Match
	// loses).
	newer atomic.Int64
}

// measureTornReads rewrites one key writes times with chained If-Match
// PUTs (as a queue does) while readers GET it with plain S3 calls, and
// counts the answers whose body is not the body of their ETag.
func measureTornReads(t *testing.T, g *gateway.Gateway, writes, readers int) *tornCount {
	t.Helper()
	ctx := context.Background()
	client := newStore(t, g)
	c := client.Client()
	bucket, key := client.Bucket(), "tasks/0/t.json"
	body := func(i int) []byte { return fmt.Appendf(nil, `{"rev":%d,"pad":"%s"}`, i, strings.Repeat("x", 200)) }
	etagOf := func(b []byte) string { sum := md5.Sum(b); return `"` + hex.EncodeToString(sum[:]) + `"` }
	// rev of each ETag written so far.
	var mu sync.Mutex
	revOf := map[string]int{}
	put := func(i int, ifMatch *string) string {
		b := body(i)
		mu.Lock()
		revOf[etagOf(b)] = i
		mu.Unlock()
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(b), IfMatch: ifMatch})
		require.NoError(t, err)
		require.Equal(t, etagOf(b), aws.ToString(out.ETag), "the gateway's ETags are body MD5s")
		return aws.ToString(out.ETag)
	}
	etag := put(0, nil)

	n := &tornCount{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for range readers {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				n.reads.Add(1)
				got := aws.ToString(out.ETag)
				if etagOf(b) == got {
					continue
				}
				var rev int
				if _, err := fmt.Sscanf(string(b), `{"rev":%d`, &rev); err != nil {
					errs <- fmt.Errorf("unexpected body %q", b)
					return
				}
				mu.Lock()
				etagRev, known := revOf[got]
				mu.Unlock()
				switch {
				case !known:
					errs <- fmt.Errorf("an ETag no write had: %s", got)
					return
				case etagRev > rev:
					n.older.Add(1)
				default:
					n.newer.Add(1)
				}
			}
		})
	}
	for i := 1; i <= writes; i++ {
		etag = put(i, aws.String(etag))
	}
	close(done)
	wg.Wait()
	close(errs)
	require.NoError(t, errors.Join(func() (all []error) {
		for err := range errs {
			all = append(all, err)
		}
		return all
	}()...))
	return n
}

// Every GET answers a body with its own ETag while the key is rewritten,
// with xattr metadata and with sidecar metadata: the read of a torn pair
// (an old body with the ETag of the write that replaced it) is what let
// a stale claim win.
func TestReadsAreWhole(t *testing.T) {
	t.Parallel()
	for _, sidecar := range []bool{false, true} {
		name := "xattr"
		if sidecar {
			name = "sidecar"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, gateway.Options{SidecarMetadata: sidecar})
			if !sidecar && g.SidecarMetadata() {
				t.Skip("this filesystem has no user xattrs")
			}
			n := measureTornReads(t, g, 300, 4)
			t.Logf("%s metadata: %d GETs during 300 chained If-Match PUTs: %d torn (body older than its ETag), %d with a stale ETag",
				name, n.reads.Load(), n.older.Load(), n.newer.Load())
			require.Positive(t, n.reads.Load())
			require.Zero(t, n.older.Load(), "GETs answered an old body with a newer write's ETag")
			require.Zero(t, n.newer.Load(), "GETs answered a new body with an older write's ETag")
		})
	}
}
