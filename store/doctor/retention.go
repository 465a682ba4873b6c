package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/qo-queue/qo/store"
)

// checkRetention reports whether finished task objects can expire: the
// provider must keep a tag written with an object (tried on a probe), and
// a lifecycle rule must expire current objects under tasks/ that carry
// qo's retention tag (qo init --tasks-retention-days installs it).
func (d *doctor) checkRetention(ctx context.Context) {
	tg, ok := d.s.(store.Tagger)
	if !ok {
		d.add(CheckRetention, StatusSkip, "this store cannot tag objects", "")
		return
	}
	key := d.prefix + "tagged"
	tag := store.Tag{Key: "qo-retention", Value: "finished"}
	_, err := tg.PutTagged(ctx, key, []byte(body("tagged")), store.Condition{}, []store.Tag{tag})
	if err == nil {
		d.remember(key)
		var tags []store.Tag
		tags, err = tg.Tags(ctx, key)
		if err == nil && (len(tags) != 1 || tags[0] != tag) {
			err = fmt.Errorf("the object came back tagged %v", tags)
		}
	}
	if err != nil {
		d.add(CheckRetention, StatusWarn, "objects cannot be tagged as they are written ("+err.Error()+"): finished tasks cannot expire by a lifecycle rule, only their old versions",
			permFix(err, "s3:PutObjectTagging and s3:GetObjectTagging"))
		return
	}
	a, ok := d.s.(store.Admin)
	if !ok {
		d.add(CheckRetention, StatusOK, "objects can be tagged as they are written", "")
		return
	}
	rules, err := a.Lifecycle(ctx)
	switch {
	case errors.Is(err, store.ErrNotSupported):
		d.add(CheckRetention, StatusOK, "objects can be tagged, but the provider has no lifecycle rules: finished tasks are kept until deleted by hand", "")
		return
	case err != nil:
		d.add(CheckRetention, StatusWarn, "objects can be tagged, but lifecycle rules cannot be read: "+err.Error(), permFix(err, "s3:GetLifecycleConfiguration"))
		return
	}
	for _, r := range rules {
		if r.ExpirationDays > 0 && r.Tag == tag && strings.HasPrefix("tasks/", r.Prefix) {
			d.add(CheckRetention, StatusOK, fmt.Sprintf("finished tasks expire %d days after they finish (rule %s)", r.ExpirationDays, r.ID), "")
			return
		}
	}
	d.add(CheckRetention, StatusOK, "objects can be tagged; finished tasks are kept forever (no expiry rule)",
		"to expire them: qo init --tasks-retention-days N")
}
