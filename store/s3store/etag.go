package s3store

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/qo-queue/qo/store"
)

// Torn reads. A compare-and-swap is only as good as the read it is based
// on: the ETag a Get returns must be the ETag of the body it returns. A
// server that pairs one version's body with another version's ETag (a torn
// read; versitygw's sidecar metadata mode does, see docs/reliability.md)
// lets a writer that read an old body win an If-Match meant for the new
// one: two workers both claim a task.
//
// Where a server's ETags are the MD5 of the body (single-part PUTs without
// SSE-KMS or SSE-C, which is all qo writes, on AWS S3, MinIO, versitygw,
// Ceph and most others), a torn read is visible: the body's MD5 is not the
// ETag. Get and GetVersion check it and, on a mismatch, read again a few
// times with a short backoff; if the reads do not settle they fail with
// store.ErrTornRead, which callers treat as a lost race. A healthy server
// costs nothing but the MD5 of each body read: no extra request.
//
// Whether a server's ETags are MD5s is learnt, not assumed from their
// shape: every Put compares the ETag it gets back with the MD5 of the body
// it sent (the last Put decides). Until the first Put, a Get whose body
// matches its ETag shows they are; a mismatch before then is read once
// more, and the same mismatch twice (on two reads) is taken as a server
// whose ETags are something else: the object is returned unchecked, and
// after two such objects Gets stop checking until a Put shows otherwise.
// On servers whose ETags are not MD5s (AWS with SSE-KMS or SSE-C) nothing
// is checked: those servers are not known to tear reads.

// ETag modes, learnt from the server's answers.
const (
	etagUnknown int32 = iota // no evidence yet
	etagMD5                  // ETags are body MD5s: Gets are checked
	etagOpaque               // ETags are something else: nothing is checked
)

// tornBackoff is the wait before each re-read of a torn Get. A tear lasts
// while one PUT of the same key commits (its metadata is in place, its
// body not yet): milliseconds.
var tornBackoff = []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 80 * time.Millisecond}

// opaqueAfter is how many objects read twice with the same mismatch make
// an unknown server's ETags opaque.
const opaqueAfter = 2

// etagState is what a Store learnt about the server's ETags and what the
// check cost.
type etagState struct {
	mode      atomic.Int32
	stableBad atomic.Int32 // unknown mode: objects read twice with the same mismatch
	rereads   atomic.Int64
	torn      atomic.Int64 // Gets that failed with store.ErrTornRead
	// sleep waits d or until ctx is done (tests replace it).
	sleep func(ctx context.Context, d time.Duration) error
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// GetUnchecked implements store.UncheckedGetter: one GET, without the
// torn-read check and its re-reads.
func (s *Store) GetUnchecked(ctx context.Context, key string) (*store.Object, error) {
	if err := checkKey("get", key); err != nil {
		return nil, err
	}
	return s.getOnce(ctx, "get", key, nil)
}

// TornReadStats reports what the torn-read check cost: the re-reads it
// sent (zero on a healthy server) and the Gets that failed with
// store.ErrTornRead.
func (s *Store) TornReadStats() (rereads, torn int64) {
	return s.etags.rereads.Load(), s.etags.torn.Load()
}

// ETagsAreMD5 reports whether the server's ETags are known to be the MD5
// of the body (so Gets are checked): known is false until a Put or a
// matching Get told.
func (s *Store) ETagsAreMD5() (md5, known bool) {
	switch s.etags.mode.Load() {
	case etagMD5:
		return true, true
	case etagOpaque:
		return false, true
	}
	return false, false
}

// md5ETag returns the hex MD5 an ETag carries, ok false for an ETag that
// is not one (a multipart "…-N" ETag, an SSE-KMS one, a weak one).
func md5ETag(etag string) (string, bool) {
	e := strings.ToLower(strings.Trim(etag, `"`))
	if len(e) != 2*md5.Size {
		return "", false
	}
	if _, err := hex.DecodeString(e); err != nil {
		return "", false
	}
	return e, true
}

func bodyMD5(body []byte) string {
	sum := md5.Sum(body)
	return hex.EncodeToString(sum[:])
}

// learnFromPut records whether the ETag a Put returned is the MD5 of the
// body it sent.
func (s *Store) learnFromPut(etag string, body []byte) {
	if e, ok := md5ETag(etag); ok && e == bodyMD5(body) {
		s.etags.mode.Store(etagMD5)
		return
	}
	s.etags.mode.Store(etagOpaque)
}

// checked is get with the torn-read check (see the top of this file).
func (s *Store) checked(ctx context.Context, op, key string, versionID *string) (*store.Object, error) {
	obj, err := s.getOnce(ctx, op, key, versionID)
	if err != nil {
		return nil, err
	}
	mode := s.etags.mode.Load()
	if mode == etagOpaque || s.settled(obj) {
		return obj, nil
	}
	first := obj
	firstMD5 := bodyMD5(first.Body)
	for _, d := range tornBackoff {
		if err := s.etags.sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("%s %s: re-read after a torn read: %w", op, key, err)
		}
		s.etags.rereads.Add(1)
		if obj, err = s.getOnce(ctx, op, key, versionID); err != nil {
			return nil, err
		}
		if s.settled(obj) {
			return obj, nil
		}
		if mode == etagUnknown {
			if obj.ETag == first.ETag && bodyMD5(obj.Body) == firstMD5 {
				// The same pair twice: a server (or an object) whose
				// ETags are not MD5s, as far as reads can tell.
				if s.etags.stableBad.Add(1) >= opaqueAfter {
					s.etags.mode.CompareAndSwap(etagUnknown, etagOpaque)
				}
				return obj, nil
			}
		}
	}
	if mode == etagUnknown {
		return obj, nil // nothing says this server's ETags are MD5s
	}
	s.etags.torn.Add(1)
	e, _ := md5ETag(obj.ETag)
	return nil, &Error{Op: op, Key: key, Bucket: s.bucket, Endpoint: s.endpoint, Kind: store.ErrTornRead,
		Err: fmt.Errorf("the body's MD5 %s is not its ETag %s, in %d reads", bodyMD5(obj.Body), e, len(tornBackoff)+1),
		Fix: "the server paired a body with another version's ETag; the operation is treated as a lost race " +
			"(a server that keeps doing this is not safe for qo: run qo doctor)"}
}

// settled reports whether obj can be returned as it is: its ETag is not an
// MD5, or it is its body's MD5 (which, while the mode is unknown, shows
// that the server's ETags are MD5s).
func (s *Store) settled(obj *store.Object) bool {
	e, ok := md5ETag(obj.ETag)
	if !ok {
		return true // a multipart or otherwise opaque ETag: nothing to check
	}
	if e != bodyMD5(obj.Body) {
		return false
	}
	s.etags.mode.CompareAndSwap(etagUnknown, etagMD5)
	return true
}
