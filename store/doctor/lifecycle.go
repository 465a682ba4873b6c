package doctor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/qo-queue/qo/store"
)

// IndexPrefixes are the key prefixes whose objects qo rewrites or deletes
// constantly (ready and lease indexes, worker heartbeats, shard and monitor
// leases). Their old versions have no value, and without a lifecycle rule a
// versioned bucket keeps every one of them forever. Task objects (tasks/)
// are deliberately not here: their versions are the task history.
var IndexPrefixes = []string{"ready/", "leases/", "dead/", "workers/", "shard-leases/", "monitor/"}

// RecommendedLifecycle returns the rules qo recommends for prefixes:
// noncurrent versions expire after one day and delete markers left without
// versions are removed.
func RecommendedLifecycle(prefixes []string) []store.LifecycleRule {
	rules := make([]store.LifecycleRule, 0, len(prefixes))
	for _, p := range prefixes {
		rules = append(rules, store.LifecycleRule{
			ID:                   "qo-expire-old-" + strings.TrimSuffix(strings.ReplaceAll(p, "/", "-"), "-"),
			Prefix:               p,
			NoncurrentDays:       1,
			ExpiredDeleteMarkers: true,
		})
	}
	return rules
}

// uncovered returns the prefixes no rule expires noncurrent versions under.
func uncovered(rules []store.LifecycleRule, prefixes []string) []string {
	var missing []string
	for _, p := range prefixes {
		covered := false
		for _, r := range rules {
			if r.NoncurrentDays > 0 && strings.HasPrefix(p, r.Prefix) {
				covered = true
				break
			}
		}
		if !covered {
			missing = append(missing, p)
		}
	}
	return missing
}

func (d *doctor) checkLifecycle(ctx context.Context) {
	if !d.versioning {
		d.add(CheckLifecycle, StatusSkip, "versioning is not on: no old versions to expire", "")
		return
	}
	a, ok := d.s.(store.Admin)
	if !ok {
		d.add(CheckLifecycle, StatusSkip, "this store cannot report lifecycle rules", "")
		return
	}
	rules, err := a.Lifecycle(ctx)
	switch {
	case errors.Is(err, store.ErrNotSupported):
		d.add(CheckLifecycle, StatusWarn,
			"the provider does not support lifecycle rules: old versions under "+strings.Join(d.opts.LifecyclePrefixes, ", ")+" accumulate",
			"delete noncurrent versions under those prefixes periodically, or use a provider with lifecycle rules")
		return
	case err != nil:
		d.add(CheckLifecycle, StatusWarn, "cannot read lifecycle rules: "+err.Error(), permFix(err, "s3:GetLifecycleConfiguration"))
		return
	}
	missing := uncovered(rules, d.opts.LifecyclePrefixes)
	if len(missing) == 0 {
		d.add(CheckLifecycle, StatusOK, "old versions expire under "+strings.Join(d.opts.LifecyclePrefixes, ", "), "")
		return
	}
	d.add(CheckLifecycle, StatusWarn,
		"no rule expires old versions under "+strings.Join(missing, ", ")+": every state change leaves a version there, kept forever",
		"run qo doctor --fix-lifecycle to add rules expiring them after 1 day")
}

// ErrForeignLifecycle: the bucket has lifecycle rules qo did not write, so
// FixLifecycle will not replace the configuration.
var ErrForeignLifecycle = errors.New("the bucket has lifecycle rules qo did not write")

// FixLifecycle adds RecommendedLifecycle rules for the prefixes (default
// IndexPrefixes) that no rule covers and returns the rules it added. A
// bucket's lifecycle configuration is replaced as a whole, and rules qo
// cannot fully read back might lose parts, so it refuses (with
// ErrForeignLifecycle, naming the rules to add by hand) when the bucket
// has rules whose ID does not start with "qo-".
func FixLifecycle(ctx context.Context, s store.Store, prefixes []string) ([]store.LifecycleRule, error) {
	if prefixes == nil {
		prefixes = IndexPrefixes
	}
	a, ok := s.(store.Admin)
	if !ok {
		return nil, fmt.Errorf("fix lifecycle: %w: this store has no bucket administration", store.ErrNotSupported)
	}
	rules, err := a.Lifecycle(ctx)
	if err != nil {
		return nil, fmt.Errorf("fix lifecycle: read rules: %w", err)
	}
	missing := uncovered(rules, prefixes)
	if len(missing) == 0 {
		return nil, nil
	}
	add := RecommendedLifecycle(missing)
	var foreign []string
	for _, r := range rules {
		if !strings.HasPrefix(r.ID, "qo-") {
			foreign = append(foreign, r.ID)
		}
	}
	if len(foreign) > 0 {
		var b strings.Builder
		for _, r := range add {
			fmt.Fprintf(&b, "; prefix %q: expire noncurrent versions after %d day(s), remove expired delete markers", r.Prefix, r.NoncurrentDays)
		}
		return nil, fmt.Errorf("fix lifecycle: %w (%s); add these rules to them by hand%s",
			ErrForeignLifecycle, strings.Join(foreign, ", "), b.String())
	}
	merged := append(append([]store.LifecycleRule{}, rules...), add...)
	sort.SliceStable(merged, func(i, j int) bool { return merged[i].Prefix < merged[j].Prefix })
	if err := a.SetLifecycle(ctx, merged); err != nil {
		return nil, fmt.Errorf("fix lifecycle: %w", err)
	}
	return add, nil
}
