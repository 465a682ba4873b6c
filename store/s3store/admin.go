package s3store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/qo-queue/qo/store"
)

// CORSExposeHeaders are the response headers a browser client of the
// bucket must be able to read.
var CORSExposeHeaders = []string{"ETag", "Date", "x-amz-version-id", "Last-Modified"}

// CORSMethods are the methods a browser client of the bucket uses.
var CORSMethods = []string{"GET", "PUT", "HEAD", "DELETE"}

// CreateBucket implements store.Admin: it creates the bucket unless it
// already exists and belongs to the caller.
func (s *Store) CreateBucket(ctx context.Context) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(s.bucket)}
	if r := s.client.Options().Region; r != "" && r != DefaultRegion {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
			LocationConstraint: types.BucketLocationConstraint(r),
		}
	}
	_, err := s.client.CreateBucket(ctx, in)
	if err == nil {
		return nil
	}
	var owned *types.BucketAlreadyOwnedByYou
	if errors.As(err, &owned) {
		return nil
	}
	var taken *types.BucketAlreadyExists
	if errors.As(err, &taken) {
		// Some servers (gofakes3) answer BucketAlreadyExists for a bucket
		// these credentials own: usable means ours.
		if s.Ping(ctx) == nil {
			return nil
		}
		e := s.wrap(ctx, "create bucket", "", err, mapOpts{}).(*Error)
		e.Fix = "the name belongs to another account: choose another S3_BUCKET"
		return e
	}
	return s.wrap(ctx, "create bucket", "", err, mapOpts{})
}

// Versioning implements store.Admin.
func (s *Store) Versioning(ctx context.Context) (bool, error) {
	out, err := s.client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(s.bucket)})
	if err != nil {
		return false, s.wrap(ctx, "get bucket versioning", "", err, mapOpts{bucketLevel: true})
	}
	return versioningEnabled(out), nil
}

// EnableVersioning implements store.Admin.
func (s *Store) EnableVersioning(ctx context.Context) error {
	_, err := s.client.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
		Bucket:                  aws.String(s.bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
	})
	if err != nil {
		return s.wrap(ctx, "enable bucket versioning", "", err, mapOpts{bucketLevel: true})
	}
	return nil
}

// lifecycleRules converts rules to the S3 shape, refusing rules that would
// be rejected or do nothing.
func lifecycleRules(rules []store.LifecycleRule) ([]types.LifecycleRule, error) {
	out := make([]types.LifecycleRule, 0, len(rules))
	seen := map[string]bool{}
	for i, r := range rules {
		if err := store.CheckLifecycleRule(r); err != nil {
			return nil, fmt.Errorf("set lifecycle: rule %d: %w", i, err)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("set lifecycle: two rules have the id %q: give every rule a unique id", r.ID)
		}
		seen[r.ID] = true
		lr := types.LifecycleRule{
			ID:     aws.String(r.ID),
			Status: types.ExpirationStatusEnabled,
			Filter: &types.LifecycleRuleFilter{Prefix: aws.String(r.Prefix)},
		}
		if r.Tag.Key != "" {
			lr.Filter = &types.LifecycleRuleFilter{And: &types.LifecycleRuleAndOperator{
				Prefix: aws.String(r.Prefix),
				Tags:   []types.Tag{{Key: aws.String(r.Tag.Key), Value: aws.String(r.Tag.Value)}},
			}}
		}
		if r.NoncurrentDays > 0 {
			lr.NoncurrentVersionExpiration = &types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(int32(r.NoncurrentDays))}
		}
		if r.ExpiredDeleteMarkers {
			lr.Expiration = &types.LifecycleExpiration{ExpiredObjectDeleteMarker: aws.Bool(true)}
		}
		if r.ExpirationDays > 0 {
			lr.Expiration = &types.LifecycleExpiration{Days: aws.Int32(int32(r.ExpirationDays))}
		}
		out = append(out, lr)
	}
	return out, nil
}

// SetLifecycle implements store.Admin. An empty rule set deletes the
// bucket's lifecycle configuration.
func (s *Store) SetLifecycle(ctx context.Context, rules []store.LifecycleRule) error {
	if len(rules) == 0 {
		_, err := s.client.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: aws.String(s.bucket)})
		if err != nil {
			return s.wrap(ctx, "delete bucket lifecycle", "", err, mapOpts{bucketLevel: true})
		}
		return nil
	}
	lrs, err := lifecycleRules(rules)
	if err != nil {
		return err
	}
	_, err = s.client.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{
		Bucket:                 aws.String(s.bucket),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: lrs},
	})
	if err != nil {
		return s.wrap(ctx, "set bucket lifecycle", "", err, mapOpts{bucketLevel: true})
	}
	return nil
}

// Lifecycle implements store.Admin. Rules qo cannot express (other filters
// or actions) are returned with the parts it understands.
func (s *Store) Lifecycle(ctx context.Context) ([]store.LifecycleRule, error) {
	out, err := s.client.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(s.bucket)})
	if err != nil {
		e := s.wrap(ctx, "get bucket lifecycle", "", err, mapOpts{})
		var se *Error
		if errors.As(e, &se) && se.Code == "NoSuchLifecycleConfiguration" {
			return nil, nil
		}
		if errors.As(e, &se) && se.Status == 404 && se.Kind == nil {
			se.Kind = store.ErrBucketNotFound
		}
		return nil, e
	}
	var rules []store.LifecycleRule
	for _, r := range out.Rules {
		lr := store.LifecycleRule{ID: aws.ToString(r.ID)}
		switch {
		case r.Filter != nil && r.Filter.Prefix != nil:
			lr.Prefix = aws.ToString(r.Filter.Prefix)
		case r.Filter != nil && r.Filter.And != nil:
			lr.Prefix = aws.ToString(r.Filter.And.Prefix)
			if len(r.Filter.And.Tags) == 1 {
				lr.Tag = store.Tag{Key: aws.ToString(r.Filter.And.Tags[0].Key), Value: aws.ToString(r.Filter.And.Tags[0].Value)}
			}
		case r.Filter != nil && r.Filter.Tag != nil:
			lr.Tag = store.Tag{Key: aws.ToString(r.Filter.Tag.Key), Value: aws.ToString(r.Filter.Tag.Value)}
		case r.Prefix != nil: //lint:ignore SA1019 legacy rules without a filter still exist
			//lint:ignore SA1019 as above
			lr.Prefix = aws.ToString(r.Prefix)
		}
		if r.NoncurrentVersionExpiration != nil {
			lr.NoncurrentDays = int(aws.ToInt32(r.NoncurrentVersionExpiration.NoncurrentDays))
		}
		if r.Expiration != nil {
			lr.ExpiredDeleteMarkers = aws.ToBool(r.Expiration.ExpiredObjectDeleteMarker)
			lr.ExpirationDays = int(aws.ToInt32(r.Expiration.Days))
		}
		rules = append(rules, lr)
	}
	return rules, nil
}

// DeleteVersion permanently deletes one version of key, or a delete
// marker (qo doctor removes its probes with it; it needs
// s3:DeleteObjectVersion).
func (s *Store) DeleteVersion(ctx context.Context, key, versionID string) error {
	if err := checkKey("delete version", key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(key), VersionId: aws.String(versionID),
	})
	if err != nil {
		return s.wrap(ctx, "delete version "+versionID+" of", key, err, mapOpts{})
	}
	return nil
}

// RemoveBucket deletes every object version and delete marker in the
// bucket, then the bucket. It is for throwaway buckets (tests, qo bench):
// nothing is kept.
func (s *Store) RemoveBucket(ctx context.Context) error {
	bucket := aws.String(s.bucket)
	// List everything first: deleting while paging would move the markers.
	var ids []types.ObjectIdentifier
	p := s3.NewListObjectVersionsPaginator(s.client, &s3.ListObjectVersionsInput{Bucket: bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return s.wrap(ctx, "remove bucket: list versions", "", err, mapOpts{bucketLevel: true})
		}
		for _, v := range page.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
	}
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: bucket,
			Delete: &types.Delete{Objects: ids[:n], Quiet: aws.Bool(true)},
		})
		if err != nil {
			return s.wrap(ctx, "remove bucket: delete versions", "", err, mapOpts{bucketLevel: true})
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("remove bucket %s: delete %s version %s: %s %s (and %d more)", s.bucket,
				aws.ToString(e.Key), aws.ToString(e.VersionId), aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors)-1)
		}
		ids = ids[n:]
	}
	if _, err := s.client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: bucket}); err != nil {
		return s.wrap(ctx, "remove bucket", "", err, mapOpts{bucketLevel: true})
	}
	return nil
}
