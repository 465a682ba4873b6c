package store

import (
	"context"
	"errors"
	"fmt"
)

// ErrTooLarge: an object is larger than the bound its reader set (see
// GetLimited). A *TooLargeError carries the key and the bound.
var ErrTooLarge = errors.New("object too large")

// TooLargeError reports an object refused because it is over a reader's
// bound. It matches ErrTooLarge.
type TooLargeError struct {
	Key string
	// Size is the object's size in bytes when the server announced it; 0
	// when only reading past Max showed it (a size the server withheld or
	// understated).
	Size int64
	Max  int64
}

func (e *TooLargeError) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("object %s is %d bytes, over the limit of %d bytes for this kind of object", e.Key, e.Size, e.Max)
	}
	return fmt.Sprintf("object %s is over the limit of %d bytes for this kind of object", e.Key, e.Max)
}

// Is makes a *TooLargeError match ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

type maxBytesKey struct{}

// WithMaxBytes returns a context under which a Get or GetVersion refuses
// an object of more than max bytes (max <= 0: no bound). Implementations
// check the size before they read the body (S3's Content-Length) and read
// at most max+1 bytes, so an object the server understates cannot get
// past either: a refused object costs the reader no memory. Wrappers that
// pass the context on keep the bound. Callers use GetLimited, which also
// checks the result.
func WithMaxBytes(ctx context.Context, max int64) context.Context {
	return context.WithValue(ctx, maxBytesKey{}, max)
}

// MaxBytes returns the bound WithMaxBytes set on ctx (0: none).
func MaxBytes(ctx context.Context) int64 {
	if v, ok := ctx.Value(maxBytesKey{}).(int64); ok && v > 0 {
		return v
	}
	return 0
}

// GetLimited is s.Get of an object of at most max bytes: a larger one is
// refused with a *TooLargeError (ErrTooLarge) naming the key and the
// bound, before its body is read by the implementations of this module
// (and after, by this check, for a Store that ignores the bound).
func GetLimited(ctx context.Context, s Store, key string, max int64) (*Object, error) {
	obj, err := s.Get(WithMaxBytes(ctx, max), key)
	return checkLimit(obj, err, key, max)
}

// GetVersionLimited is GetLimited for one version of key.
func GetVersionLimited(ctx context.Context, s Store, key, versionID string, max int64) (*Object, error) {
	obj, err := s.GetVersion(WithMaxBytes(ctx, max), key, versionID)
	return checkLimit(obj, err, key, max)
}

func checkLimit(obj *Object, err error, key string, max int64) (*Object, error) {
	if err != nil {
		return nil, err
	}
	if max > 0 && int64(len(obj.Body)) > max {
		return nil, fmt.Errorf("get %s: %w", key, &TooLargeError{Key: key, Size: int64(len(obj.Body)), Max: max})
	}
	return obj, nil
}
