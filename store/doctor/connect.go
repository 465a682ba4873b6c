package doctor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qo-queue/qo/store"
)

// connect runs the reachable, credentials and bucket checks; false means
// nothing else can run.
func (d *doctor) connect(ctx context.Context) bool {
	start := d.opts.Now()
	var err error
	if p, ok := d.s.(pinger); ok {
		err = p.Ping(ctx)
	} else {
		_, err = d.s.List(ctx, store.ListParams{Prefix: d.prefix, Limit: 1})
	}
	took := d.opts.Now().Sub(start)
	if took >= time.Millisecond {
		took = took.Round(time.Millisecond)
	} else {
		took = took.Round(10 * time.Microsecond)
	}
	after := []string{CheckVersioning, CheckCreateOnly, CheckIfMatch, CheckTornReads, CheckListPaging,
		CheckVersions, CheckClock, CheckLifecycle, CheckRetention, CheckCleanup}
	switch {
	case err == nil:
		d.add(CheckReachable, StatusOK, fmt.Sprintf("answered in %v", took), "")
		d.add(CheckCredentials, StatusOK, "accepted", "")
		d.add(CheckBucket, StatusOK, fmt.Sprintf("%q exists", d.bucket), "")
		return true
	case errors.Is(err, store.ErrUnreachable):
		d.add(CheckReachable, StatusFail, err.Error(),
			"check S3_ENDPOINT (or --endpoint) and that the server is running and reachable from here")
		d.skip("endpoint unreachable", append([]string{CheckCredentials, CheckBucket}, after...)...)
	case errors.Is(err, store.ErrAccessDenied):
		d.add(CheckReachable, StatusOK, fmt.Sprintf("answered in %v", took), "")
		d.add(CheckCredentials, StatusFail, err.Error(),
			"check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), and that they may read and write the bucket")
		d.skip("credentials rejected", append([]string{CheckBucket}, after...)...)
	case errors.Is(err, store.ErrBucketNotFound):
		d.add(CheckReachable, StatusOK, fmt.Sprintf("answered in %v", took), "")
		d.add(CheckCredentials, StatusOK, "accepted", "")
		d.add(CheckBucket, StatusFail, err.Error(),
			fmt.Sprintf("create the bucket (qo init does), or check S3_BUCKET (or --bucket); it is %q now", d.bucket))
		d.skip("bucket missing", after...)
	default:
		d.add(CheckReachable, StatusFail, err.Error(), "check S3_ENDPOINT (or --endpoint), S3_REGION and the server's logs")
		d.skip("endpoint did not answer properly", append([]string{CheckCredentials, CheckBucket}, after...)...)
	}
	return false
}

func (d *doctor) versioningFix() string {
	return fmt.Sprintf("enable it (aws s3api put-bucket-versioning --bucket %s --versioning-configuration Status=Enabled, or mc version enable ALIAS/%s), or set QO_ALLOW_NO_VERSIONING=1 to run without task history",
		d.bucket, d.bucket)
}

func (d *doctor) checkVersioning(ctx context.Context) {
	a, ok := d.s.(store.Admin)
	if !ok {
		d.add(CheckVersioning, StatusWarn, "this store cannot report its versioning", "")
		return
	}
	on, err := a.Versioning(ctx)
	switch {
	case err != nil:
		d.add(CheckVersioning, StatusFail, "cannot read the bucket's versioning: "+err.Error(),
			"allow s3:GetBucketVersioning to these credentials")
	case on:
		d.versioning = true
		d.add(CheckVersioning, StatusOK, "enabled", "")
	case d.opts.AllowNoVersioning:
		d.add(CheckVersioning, StatusWarn, "off, allowed by QO_ALLOW_NO_VERSIONING=1: task history is unavailable", d.versioningFix())
	default:
		d.add(CheckVersioning, StatusFail, "off: qo keeps task history in object versions", d.versioningFix())
	}
}
