package doctor

import (
	"context"
	"fmt"
)

func (d *doctor) checkVersions(ctx context.Context) {
	if !d.versioning {
		d.add(CheckVersions, StatusSkip, "versioning is not on", "")
		return
	}
	if len(d.verWrites) < 2 {
		d.add(CheckVersions, StatusSkip, "the probes did not write two versions of a key", "")
		return
	}
	writes := d.verWrites
	vs, err := d.s.ListVersions(ctx, d.verKey)
	if err != nil {
		d.add(CheckVersions, StatusFail, "LIST versions failed: "+err.Error(), permFix(err, "s3:ListBucketVersions"))
		return
	}
	// Where each write is listed (bodies differ, so do ETags).
	pos := make([]int, len(writes))
	for w := range writes {
		pos[w] = -1
		for i, v := range vs {
			if v.ETag == writes[w].etag && !v.DeleteMarker {
				pos[w] = i
			}
		}
		if pos[w] < 0 {
			d.add(CheckVersions, StatusFail, fmt.Sprintf("%d writes of a key left %d versions: write %d is not listed", len(writes), len(vs), w+1),
				"qo reads task history from object versions; check that versioning really is enabled")
			return
		}
	}
	oldest := vs[pos[0]]
	obj, err := d.s.GetVersion(ctx, d.verKey, oldest.VersionID)
	switch {
	case err != nil:
		d.add(CheckVersions, StatusFail, "GET of an old version failed: "+err.Error(), permFix(err, "s3:GetObjectVersion"))
		return
	case string(obj.Body) != writes[0].body:
		d.add(CheckVersions, StatusFail, "GET of an old version returned another body", "")
		return
	}
	newestFirst, oldestFirst := true, true
	for w := 1; w < len(writes); w++ {
		newestFirst = newestFirst && pos[w] < pos[w-1]
		oldestFirst = oldestFirst && pos[w] > pos[w-1]
	}
	latest := vs[pos[len(writes)-1]].IsLatest
	effect := "qo orders task history by rev, so qo history is right, but tools that trust the listing's order (aws s3api list-object-versions, scripts) show task history out of order"
	switch {
	case newestFirst && latest:
		d.add(CheckVersions, StatusOK, fmt.Sprintf("%d versions listed newest first; old versions readable", len(writes)), "")
	case oldestFirst:
		d.add(CheckVersions, StatusWarn, fmt.Sprintf("%d versions are listed oldest first (the S3 API lists them newest first): %s", len(writes), effect),
			"nothing to do for qo; report it to the provider")
	case !latest:
		d.add(CheckVersions, StatusWarn, "the newest write is not marked as the latest version (IsLatest): "+effect,
			"nothing to do for qo; report it to the provider")
	default:
		d.add(CheckVersions, StatusWarn, fmt.Sprintf("%d versions are listed in neither newest-first nor oldest-first order: %s", len(writes), effect),
			"nothing to do for qo; report it to the provider")
	}
}
