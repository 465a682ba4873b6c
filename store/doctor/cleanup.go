package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/qo-queue/qo/store"
)

// cleanup removes every version of every probe key.
func (d *doctor) cleanup(ctx context.Context) {
	// Probes are removed even when the caller's context is done.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	vd, permanent := versionDeleterOf(d.s)
	var failed []string
	var lastErr error
	for _, key := range d.written {
		if !permanent {
			if err := d.s.Delete(ctx, key, store.Condition{}); err != nil {
				failed, lastErr = append(failed, key), err
			}
			continue
		}
		vs, err := d.s.ListVersions(ctx, key)
		if err != nil || len(vs) == 0 {
			// Unversioned, or versions unreadable: a plain delete.
			if err := d.s.Delete(ctx, key, store.Condition{}); err != nil {
				failed, lastErr = append(failed, key), err
			}
			continue
		}
		for _, v := range vs {
			if err := vd.DeleteVersion(ctx, key, v.VersionID); err != nil {
				failed, lastErr = append(failed, key), err
				break
			}
		}
	}
	switch {
	case len(failed) > 0:
		d.add(CheckCleanup, StatusWarn,
			fmt.Sprintf("could not remove %d probe object(s) under %s: %v", len(failed), d.prefix, lastErr),
			fmt.Sprintf("delete everything under s3://%s/%s by hand", d.bucket, d.prefix))
	case permanent || !d.versioning:
		d.add(CheckCleanup, StatusOK, fmt.Sprintf("removed %d probe object(s) under %s", len(d.written), d.prefix), "")
	default:
		d.add(CheckCleanup, StatusOK,
			fmt.Sprintf("deleted %d probe object(s) under %s (their old versions remain until removed by hand or a lifecycle rule)", len(d.written), d.prefix), "")
	}
}

// versionDeleterOf returns how to delete single versions of s, if it can.
func versionDeleterOf(s store.Store) (VersionDeleter, bool) {
	vd, ok := s.(VersionDeleter)
	return vd, ok
}
