//go:build !nogateway

package gateway

import (
	"context"
	"io"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/versity/versitygw/backend"
	"github.com/versity/versitygw/s3response"
)

// Whole reads. versitygw's posix backend (v1.8.0) keeps an object's body
// in one file and its ETag (with its other metadata) apart from it:
// in an extended attribute of the file, or with sidecar metadata in a
// file of its own under meta/. A PUT stages the body in a temporary file,
// then, under its per-key publish lock, stores the metadata and last links
// the body into place. A GET takes no lock: it reads the ETag attribute by
// path first, then opens the object's file.
//
// With sidecar metadata the new ETag is in place (renamed into meta/)
// before the new body is linked, so a GET between the two answers the old
// body with the new ETag: a torn read, and a compare-and-swap based on it
// wins against the very write whose ETag it presents. With xattrs the
// ETag travels with the file, but a GET that reads it just before a PUT's
// link and opens the file just after answers the new body with the old
// ETag (a stale ETag, which loses its If-Match: harmless, but not whole).
//
// serialized closes both windows in every mode: for one key, reads (GET,
// HEAD, GetObjectAttributes) share a lock that writes (PUT, copy onto it,
// DELETE, CompleteMultipartUpload) take alone, so a read sees an object
// entirely before or entirely after a write. A GET keeps its share until
// the body it returns is read to the end or closed. (The posix backend
// streams from a file opened before GetObject returns, which a later write
// replaces rather than rewrites, so the body cannot change once open; the
// lock is kept anyway, so that nothing depends on that.)
type serialized struct {
	backend.Backend
	locks keyLocks
}

func newSerialized(be backend.Backend) *serialized {
	return &serialized{Backend: be, locks: keyLocks{m: map[string]*keyLock{}}}
}

// keyLocks is one RWMutex per key in use, dropped when unused.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	sync.RWMutex
	users int
}

func objectKey(bucket, key *string) string { return aws.ToString(bucket) + "/" + aws.ToString(key) }

func (l *keyLocks) acquire(key string) *keyLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.m[key]
	if k == nil {
		k = &keyLock{}
		l.m[key] = k
	}
	k.users++
	return k
}

func (l *keyLocks) release(key string, k *keyLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k.users--; k.users == 0 {
		delete(l.m, key)
	}
}

// read takes key's shared lock and returns its release (idempotent).
func (l *keyLocks) read(key string) func() {
	k := l.acquire(key)
	k.RLock()
	var once sync.Once
	return func() {
		once.Do(func() {
			k.RUnlock()
			l.release(key, k)
		})
	}
}

// write takes the exclusive locks of keys (in order, each once) and
// returns their release.
func (l *keyLocks) write(keys ...string) func() {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	held := make([]*keyLock, len(keys))
	for i, key := range keys {
		held[i] = l.acquire(key)
		held[i].Lock()
	}
	return func() {
		for i := len(keys) - 1; i >= 0; i-- {
			held[i].Unlock()
			l.release(keys[i], held[i])
		}
	}
}

// unlockingBody releases a GET's share of its key's lock when the body is
// read to the end or closed, whichever comes first.
type unlockingBody struct {
	io.ReadCloser
	release func()
}

func (b *unlockingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.release()
	}
	return n, err
}

func (b *unlockingBody) Close() error {
	defer b.release()
	return b.ReadCloser.Close()
}

func (s *serialized) GetObject(ctx context.Context, in *s3.GetObjectInput) (*s3.GetObjectOutput, error) {
	release := s.locks.read(objectKey(in.Bucket, in.Key))
	out, err := s.Backend.GetObject(ctx, in)
	if err != nil || out == nil || out.Body == nil {
		release()
		return out, err
	}
	out.Body = &unlockingBody{ReadCloser: out.Body, release: release}
	return out, nil
}

func (s *serialized) HeadObject(ctx context.Context, in *s3.HeadObjectInput) (*s3.HeadObjectOutput, error) {
	defer s.locks.read(objectKey(in.Bucket, in.Key))()
	return s.Backend.HeadObject(ctx, in)
}

func (s *serialized) GetObjectAttributes(ctx context.Context, in *s3.GetObjectAttributesInput) (s3response.GetObjectAttributesResponse, error) {
	defer s.locks.read(objectKey(in.Bucket, in.Key))()
	return s.Backend.GetObjectAttributes(ctx, in)
}

func (s *serialized) PutObject(ctx context.Context, in s3response.PutObjectInput) (s3response.PutObjectOutput, error) {
	defer s.locks.write(objectKey(in.Bucket, in.Key))()
	return s.Backend.PutObject(ctx, in)
}

func (s *serialized) CopyObject(ctx context.Context, in s3response.CopyObjectInput) (s3response.CopyObjectOutput, error) {
	defer s.locks.write(objectKey(in.Bucket, in.Key))()
	return s.Backend.CopyObject(ctx, in)
}

func (s *serialized) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput) (*s3.DeleteObjectOutput, error) {
	defer s.locks.write(objectKey(in.Bucket, in.Key))()
	return s.Backend.DeleteObject(ctx, in)
}

func (s *serialized) DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput) (s3response.DeleteResult, error) {
	var keys []string
	if in.Delete != nil {
		for _, o := range in.Delete.Objects {
			keys = append(keys, objectKey(in.Bucket, o.Key))
		}
	}
	defer s.locks.write(keys...)()
	return s.Backend.DeleteObjects(ctx, in)
}

func (s *serialized) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput) (s3response.CompleteMultipartUploadResult, string, error) {
	defer s.locks.write(objectKey(in.Bucket, in.Key))()
	return s.Backend.CompleteMultipartUpload(ctx, in)
}
