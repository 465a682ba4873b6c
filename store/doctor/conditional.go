package doctor

import (
	"context"
	"errors"
	"fmt"

	"github.com/qo-queue/qo/store"
)

func (d *doctor) checkCreateOnly(ctx context.Context) {
	key := d.prefix + "create-only.json"
	if _, err := d.put(ctx, key, body("create-only 1"), store.CreateOnly); err != nil {
		d.add(CheckCreateOnly, StatusFail, "create-only PUT (If-None-Match: *) of a new key failed: "+err.Error(), notSupportedFix(err))
		return
	}
	_, err := d.put(ctx, key, body("create-only 2"), store.CreateOnly)
	if c := judgeOverwrite(err); c != nil {
		d.report.Checks = append(d.report.Checks, *c)
		return
	}
	d.add(CheckCreateOnly, StatusOK, "a second create-only PUT of the same key was refused", "")
}

// judgeOverwrite judges a create-only PUT of a key that exists: nil when
// it was refused, else the failed create-only check.
func judgeOverwrite(err error) *Check {
	switch {
	case errors.Is(err, store.ErrPreconditionFailed):
		return nil
	case err == nil:
		return &Check{Name: CheckCreateOnly, Status: StatusFail,
			Detail: "the provider ignored If-None-Match: * and overwrote an existing object", Fix: unsafeProvider}
	default:
		return &Check{Name: CheckCreateOnly, Status: StatusFail,
			Detail: "a create-only PUT of an existing key failed with an unexpected error: " + err.Error(), Fix: notSupportedFix(err)}
	}
}

// judgeStaleIfMatch judges a PUT presenting what (a stale or bogus ETag)
// in If-Match: nil when it was refused, else the failed if-match check.
func judgeStaleIfMatch(what string, err error) *Check {
	switch {
	case errors.Is(err, store.ErrPreconditionFailed):
		return nil
	case err == nil:
		return &Check{Name: CheckIfMatch, Status: StatusFail,
			Detail: fmt.Sprintf("the provider accepted a PUT with %s in If-Match: it ignores If-Match, so compare-and-swap is not enforced", what),
			Fix:    unsafeProvider}
	default:
		return &Check{Name: CheckIfMatch, Status: StatusFail,
			Detail: fmt.Sprintf("PUT with %s in If-Match failed with an unexpected error: %v", what, err), Fix: notSupportedFix(err)}
	}
}

func (d *doctor) checkIfMatch(ctx context.Context) {
	key := d.prefix + "if-match.json"
	d.verKey = key
	write := func(b string, cond store.Condition) (store.PutResult, error) {
		res, err := d.put(ctx, key, b, cond)
		if err == nil {
			d.verWrites = append(d.verWrites, probeWrite{res.ETag, b})
		}
		return res, err
	}
	firstBody, secondBody := body("if-match 1"), body("if-match 2")
	first, err := write(firstBody, store.Condition{})
	if err != nil {
		d.add(CheckIfMatch, StatusFail, "plain PUT failed: "+err.Error(), notSupportedFix(err))
		return
	}
	second, err := write(secondBody, store.IfMatch(first.ETag))
	if err != nil {
		d.add(CheckIfMatch, StatusFail, "PUT with the current ETag in If-Match failed: "+err.Error(), unsafeProvider)
		return
	}
	if first.ETag == second.ETag {
		d.add(CheckIfMatch, StatusFail, fmt.Sprintf("two different bodies got the same ETag %s", first.ETag), unsafeProvider)
		return
	}
	for _, stale := range []struct{ what, etag string }{
		{"a stale ETag", first.ETag},
		{"a bogus ETag", bogusETag},
	} {
		_, err := write(body("if-match lost"), store.IfMatch(stale.etag))
		if c := judgeStaleIfMatch(stale.what, err); c != nil {
			d.report.Checks = append(d.report.Checks, *c)
			return
		}
	}
	obj, err := d.s.Get(ctx, key)
	switch {
	case err != nil:
		d.add(CheckIfMatch, StatusFail, "reading the probe back failed: "+err.Error(), "")
	case string(obj.Body) != secondBody:
		d.add(CheckIfMatch, StatusFail, "a refused conditional PUT changed the object anyway", unsafeProvider)
	case obj.ETag != second.ETag:
		d.add(CheckIfMatch, StatusFail, fmt.Sprintf("GET returned ETag %s, the PUT returned %s: ETags are not stable", obj.ETag, second.ETag), unsafeProvider)
	default:
		d.add(CheckIfMatch, StatusOK, "PUT with the current ETag succeeded; stale and bogus ETags were refused", "")
	}
}
