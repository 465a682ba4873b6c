package doctor

import (
	"context"
	"errors"
	"fmt"

	"github.com/qo-queue/qo/store"
)

// ErrUnsafe: the server does not honour the conditional writes qo's
// compare-and-swap relies on (Probe found it ignoring If-None-Match or
// If-Match). Running a queue on it would run tasks twice.
var ErrUnsafe = errors.New("the storage server does not honour conditional writes")

// Probe checks, in at most three PUTs to key, that s refuses what the
// create-only and if-match checks of Run expect refused: a create-only PUT
// over an existing object and a PUT presenting a bogus ETag in If-Match.
// qo init and every worker run it once as they start, so that a server
// ignoring conditions (s3rver, rclone serve s3 and fauxqs do) is refused
// before it runs a task twice.
//
// key is one fixed key per purpose: the first Probe on a bucket creates
// it, and afterwards every write of a conforming server is refused, so it
// never gains another version however often workers start, and probes
// running at once cannot disturb each other. (A server that ignores the
// conditions gains a version per probe, and is refused.)
//
// The error wraps ErrUnsafe, with the check's finding and fix (the ones
// qo doctor reports), when a condition was ignored; other failures (the
// bucket unreachable, access denied) are returned as the store reported
// them, wrapped.
func Probe(ctx context.Context, s store.Store, key string) error {
	_, err := s.Put(ctx, key, []byte(body("probe")), store.CreateOnly)
	if err != nil && !errors.Is(err, store.ErrPreconditionFailed) {
		if errors.Is(err, store.ErrNotSupported) {
			return probeError(Check{Name: CheckCreateOnly, Status: StatusFail,
				Detail: "create-only PUT (If-None-Match: *) failed: " + err.Error(), Fix: unsafeProvider})
		}
		return fmt.Errorf("probe conditional writes at %s: %w", key, err)
	}
	verdict := func(c *Check, err error) error {
		switch {
		case c == nil:
			return nil
		case err != nil && !errors.Is(err, store.ErrNotSupported):
			// Not a verdict on the server: unreachable, access denied, ...
			return fmt.Errorf("probe conditional writes at %s: %w", key, err)
		}
		return probeError(*c)
	}
	// The key exists now, written by this probe or an earlier one.
	_, err = s.Put(ctx, key, []byte(body("probe overwrite")), store.CreateOnly)
	if err := verdict(judgeOverwrite(err), err); err != nil {
		return err
	}
	_, err = s.Put(ctx, key, []byte(body("probe bogus etag")), store.IfMatch(bogusETag))
	return verdict(judgeStaleIfMatch("a bogus ETag", err), err)
}

// probeError is the error of a failed probe check.
func probeError(c Check) error {
	if c.Fix == "" {
		c.Fix = "run qo doctor for the details; see " + ProvidersDoc
	}
	return fmt.Errorf("%w: %s: %s (fix: %s)", ErrUnsafe, c.Name, c.Detail, c.Fix)
}
