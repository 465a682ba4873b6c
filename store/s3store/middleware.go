package s3store

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/qo-queue/qo/store"
)

// addMiddleware installs the per-request middleware as the innermost step
// of deserialization, right around the HTTP round trip. The SDK's retry loop
// sits further out (finalize step), so every attempt passes through it.
func (s *Store) addMiddleware(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("qoRequestObserver", s.handleRequest), middleware.After)
}

// opOf maps an S3 operation name to the billing kind.
func opOf(name string) store.Op {
	switch name {
	case "PutObject":
		return store.OpPut
	case "GetObject":
		return store.OpGet
	case "HeadObject", "HeadBucket":
		return store.OpHead
	case "ListObjectsV2", "ListObjects":
		return store.OpList
	case "DeleteObject":
		return store.OpDelete
	case "ListObjectVersions":
		return store.OpListVersions
	default:
		return store.OpOther
	}
}

// versionOrderKey holds, in a ListObjectVersions result's metadata, the
// version ids in document order (see orderVersions).
type versionOrderKey struct{}

// handleRequest counts one HTTP attempt, reports its latency, feeds the
// clock estimate with the response's Date, and for ListObjectVersions
// records the document order of versions and delete markers.
func (s *Store) handleRequest(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	out middleware.DeserializeOutput, md middleware.Metadata, err error,
) {
	op := opOf(middleware.GetOperationName(ctx))
	sent := s.clock.now()
	out, md, err = next.HandleDeserialize(ctx, in)
	received := s.clock.now()

	resp, _ := out.RawResponse.(*smithyhttp.Response)
	outcome := err
	if resp != nil {
		s.clock.observe(sent, received, resp.Header)
		if err == nil && resp.StatusCode >= 400 {
			outcome = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		if err == nil && resp.StatusCode < 300 && op == store.OpListVersions && resp.Body != nil {
			order, body, rerr := versionOrder(resp.Body)
			resp.Body = io.NopCloser(bytes.NewReader(body))
			if rerr == nil {
				md.Set(versionOrderKey{}, order)
			}
		}
	} else if err == nil {
		outcome = fmt.Errorf("no HTTP response")
	}
	s.counters.Add(op, outcome != nil)
	if s.observe != nil {
		s.observe(op, received.Sub(sent), outcome)
	}
	return out, md, err
}

// versionOrder reads a ListObjectVersions response body and returns the
// version ids of its Version and DeleteMarker elements in document order,
// together with the body bytes for the SDK's own decoder.
func versionOrder(r io.ReadCloser) ([]string, []byte, error) {
	body, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		return nil, body, err
	}
	dec := xml.NewDecoder(bytes.NewReader(body))
	var order []string
	depth := 0
	inEntry := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return order, body, nil
		}
		if err != nil {
			return nil, body, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 2 && (t.Name.Local == "Version" || t.Name.Local == "DeleteMarker") {
				inEntry = true
			}
			if inEntry && depth == 3 && t.Name.Local == "VersionId" {
				var id string
				if err := dec.DecodeElement(&id, &t); err != nil {
					return nil, body, err
				}
				depth--
				order = append(order, id)
			}
		case xml.EndElement:
			if depth == 2 {
				inEntry = false
			}
			depth--
		}
	}
}
