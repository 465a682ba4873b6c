package doctor

import (
	"context"
	"fmt"

	"github.com/qo-queue/qo/store"
)

func (d *doctor) checkListPaging(ctx context.Context) {
	const n = 5
	dir := d.prefix + "list/"
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("%s%d.json", dir, i)
		if _, err := d.put(ctx, want[i], body("list"), store.Condition{}); err != nil {
			d.add(CheckListPaging, StatusFail, "writing probe keys failed: "+err.Error(), "")
			return
		}
	}
	fix := "qo pages listings with max-keys and continuation tokens; this provider's listing does not conform to the S3 API"
	var got []string
	token := ""
	pages := 0
	for {
		page, err := d.s.List(ctx, store.ListParams{Prefix: dir, Limit: 2, Token: token})
		if err != nil {
			d.add(CheckListPaging, StatusFail, "LIST failed: "+err.Error(), permFix(err, "s3:ListBucket"))
			return
		}
		pages++
		if len(page.Objects) > 2 {
			d.add(CheckListPaging, StatusFail, fmt.Sprintf("a page of limit 2 held %d keys", len(page.Objects)), fix)
			return
		}
		for _, o := range page.Objects {
			got = append(got, o.Key)
		}
		if page.NextToken == "" {
			break
		}
		if page.NextToken == token || pages > n+1 {
			d.add(CheckListPaging, StatusFail, "the continuation token does not advance", fix)
			return
		}
		token = page.NextToken
	}
	if !equal(got, want) {
		d.add(CheckListPaging, StatusFail, fmt.Sprintf("paging with limit 2 returned %v, want %v", got, want), fix)
		return
	}
	page, err := d.s.List(ctx, store.ListParams{Prefix: dir, StartAfter: want[1], Limit: 2})
	if err != nil {
		d.add(CheckListPaging, StatusFail, "LIST with start-after failed: "+err.Error(), "")
		return
	}
	var after []string
	for _, o := range page.Objects {
		after = append(after, o.Key)
	}
	if !equal(after, want[2:4]) {
		d.add(CheckListPaging, StatusFail, fmt.Sprintf("LIST after %s returned %v, want %v", want[1], after, want[2:4]), fix)
		return
	}
	d.add(CheckListPaging, StatusOK, fmt.Sprintf("%d keys in %d pages of 2, in order; start-after honoured", n, pages), "")
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
