package s3store

import (
	"context"
	"errors"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/qo-queue/qo/store"
)

// List implements store.Store with ListObjectsV2.
func (s *Store) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket)}
	if p.Prefix != "" {
		in.Prefix = aws.String(p.Prefix)
	}
	if p.StartAfter != "" {
		in.StartAfter = aws.String(p.StartAfter)
	}
	if p.Delimiter != "" {
		in.Delimiter = aws.String(p.Delimiter)
	}
	if p.Limit > 0 {
		in.MaxKeys = aws.Int32(int32(min(p.Limit, 1000)))
	}
	if p.Token != "" {
		in.ContinuationToken = aws.String(p.Token)
	}
	out, err := s.client.ListObjectsV2(ctx, in)
	if err != nil {
		return store.ListPage{}, s.wrap(ctx, "list", p.Prefix+"*", err, mapOpts{bucketLevel: true})
	}
	page := store.ListPage{Objects: make([]store.ObjectInfo, 0, len(out.Contents))}
	for _, o := range out.Contents {
		page.Objects = append(page.Objects, store.ObjectInfo{
			Key:          aws.ToString(o.Key),
			ETag:         aws.ToString(o.ETag),
			Size:         aws.ToInt64(o.Size),
			LastModified: aws.ToTime(o.LastModified),
		})
	}
	for _, cp := range out.CommonPrefixes {
		page.CommonPrefixes = append(page.CommonPrefixes, aws.ToString(cp.Prefix))
	}
	if aws.ToBool(out.IsTruncated) {
		page.NextToken = aws.ToString(out.NextContinuationToken)
		if page.NextToken == "" {
			// Defensive: a truncated page without a token would loop.
			return page, s.wrap(ctx, "list", p.Prefix+"*", errors.New("server answered a truncated page without a continuation token"), mapOpts{})
		}
	}
	return page, nil
}

// ListVersions implements store.Store: every version and delete marker of
// exactly key (not of the other keys sharing it as a prefix), newest first,
// across as many ListObjectVersions pages as it takes.
func (s *Store) ListVersions(ctx context.Context, key string) ([]store.Version, error) {
	if err := checkKey("list versions", key); err != nil {
		return nil, err
	}
	var (
		all               []store.Version
		keyMarker, idMark *string
	)
	for {
		out, err := s.client.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{
			Bucket:          aws.String(s.bucket),
			Prefix:          aws.String(key),
			KeyMarker:       keyMarker,
			VersionIdMarker: idMark,
		})
		if err != nil {
			return nil, s.wrap(ctx, "list versions", key, err, mapOpts{bucketLevel: true})
		}
		var page []store.Version
		beyond := false // saw a longer key: exactly-key versions are done
		for _, v := range out.Versions {
			if aws.ToString(v.Key) != key {
				beyond = true
				continue
			}
			page = append(page, store.Version{
				Key:          key,
				VersionID:    aws.ToString(v.VersionId),
				ETag:         aws.ToString(v.ETag),
				LastModified: aws.ToTime(v.LastModified),
				IsLatest:     aws.ToBool(v.IsLatest),
				Size:         aws.ToInt64(v.Size),
			})
		}
		for _, m := range out.DeleteMarkers {
			if aws.ToString(m.Key) != key {
				beyond = true
				continue
			}
			page = append(page, store.Version{
				Key:          key,
				VersionID:    aws.ToString(m.VersionId),
				LastModified: aws.ToTime(m.LastModified),
				IsLatest:     aws.ToBool(m.IsLatest),
				DeleteMarker: true,
			})
		}
		pageOrder, _ := out.ResultMetadata.Get(versionOrderKey{}).([]string)
		all = append(all, orderVersions(page, pageOrder)...)
		if beyond || !aws.ToBool(out.IsTruncated) {
			return all, nil
		}
		keyMarker, idMark = out.NextKeyMarker, out.NextVersionIdMarker
		if keyMarker == nil && idMark == nil {
			return all, nil
		}
	}
}

// orderVersions sorts one page's versions and delete markers of one key
// newest first. The SDK returns them as two separate lists, and servers
// differ in what the response says about their order:
//
//   - AWS S3 and MinIO interleave versions and delete markers in the
//     document, newest first; order holds the version ids in document order.
//   - versitygw lists all delete markers before all versions, but its
//     version ids are ULIDs, which sort by creation time.
//
// So: the latest entry first; then, when every id is a ULID, ids
// descending; else document order; else (no order recorded)
// LastModified descending.
func orderVersions(vs []store.Version, order []string) []store.Version {
	pos := make(map[string]int, len(order))
	for i, id := range order {
		if _, dup := pos[id]; !dup {
			pos[id] = i
		}
	}
	byDocument := len(order) > 0
	byULID := true
	for _, v := range vs {
		if _, ok := pos[v.VersionID]; !ok {
			byDocument = false
		}
		if !isULID(v.VersionID) {
			byULID = false
		}
	}
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		switch {
		case a.IsLatest != b.IsLatest:
			return a.IsLatest
		case byULID:
			return a.VersionID > b.VersionID
		case byDocument:
			return pos[a.VersionID] < pos[b.VersionID]
		default:
			return a.LastModified.After(b.LastModified)
		}
	})
	return vs
}

// isULID reports whether id looks like a ULID: 26 characters of Crockford
// base32, upper case, starting with 0-7 (the 48-bit millisecond time
// first, so ULIDs sort by time).
func isULID(id string) bool {
	if len(id) != 26 || id[0] > '7' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9':
		case c >= 'A' && c <= 'Z' && c != 'I' && c != 'L' && c != 'O' && c != 'U':
		default:
			return false
		}
	}
	return true
}
