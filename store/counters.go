package store

import (
	"sort"
	"strconv"
	"sync/atomic"
)

// Op names a billable request kind. S3 prices requests per kind, so qo
// counts every request it sends by Op (including SDK retries).
type Op string

// Request kinds.
const (
	OpPut          Op = "PUT"
	OpGet          Op = "GET"
	OpHead         Op = "HEAD"
	OpList         Op = "LIST"
	OpDelete       Op = "DELETE"
	OpListVersions Op = "LIST-VERSIONS"
	OpOther        Op = "OTHER" // bucket configuration and the like
)

// Ops lists every Op in display order.
var Ops = []Op{OpPut, OpGet, OpHead, OpList, OpDelete, OpListVersions, OpOther}

// Counters counts requests by Op and outcome. The zero value is ready to use
// and safe for concurrent use.
type Counters struct {
	ok     [7]atomic.Int64
	failed [7]atomic.Int64
}

func opIndex(op Op) int {
	for i, o := range Ops {
		if o == op {
			return i
		}
	}
	return len(Ops) - 1
}

// Add records one request of kind op; failed is true when the server
// answered an error or the request did not complete (a 412 from a lost
// compare-and-swap counts as failed: it is billed all the same).
func (c *Counters) Add(op Op, failed bool) {
	if failed {
		c.failed[opIndex(op)].Add(1)
		return
	}
	c.ok[opIndex(op)].Add(1)
}

// Counts is a snapshot of Counters.
type Counts struct {
	OK     map[Op]int64 `json:"ok"`
	Failed map[Op]int64 `json:"failed"`
}

// Snapshot returns the current counts.
func (c *Counters) Snapshot() Counts {
	s := Counts{OK: map[Op]int64{}, Failed: map[Op]int64{}}
	for i, op := range Ops {
		if n := c.ok[i].Load(); n != 0 {
			s.OK[op] = n
		}
		if n := c.failed[i].Load(); n != 0 {
			s.Failed[op] = n
		}
	}
	return s
}

// Total returns all requests of kind op, successful or not.
func (s Counts) Total(op Op) int64 { return s.OK[op] + s.Failed[op] }

// Sub returns s minus earlier, for counting the requests of one interval.
func (s Counts) Sub(earlier Counts) Counts {
	d := Counts{OK: map[Op]int64{}, Failed: map[Op]int64{}}
	for _, op := range Ops {
		if n := s.OK[op] - earlier.OK[op]; n != 0 {
			d.OK[op] = n
		}
		if n := s.Failed[op] - earlier.Failed[op]; n != 0 {
			d.Failed[op] = n
		}
	}
	return d
}

// String renders counts compactly, e.g. "GET=3 PUT=5".
func (s Counts) String() string {
	keys := make([]string, 0, len(Ops))
	for _, op := range Ops {
		if t := s.Total(op); t != 0 {
			keys = append(keys, string(op)+"="+strconv.FormatInt(t, 10))
		}
	}
	sort.Strings(keys)
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += " "
		}
		out += k
	}
	return out
}

// Counted is implemented by stores that count their requests.
type Counted interface {
	Requests() *Counters
}

// Prices are per-request prices in US dollars per 1,000 requests, by kind.
// S3 bills PUT, COPY, POST and LIST at one rate and GET (and everything
// else) at another; DELETE is free.
type Prices struct {
	PutPer1000    float64 `json:"put_per_1000"`    // PUT, LIST, LIST-VERSIONS, bucket configuration
	GetPer1000    float64 `json:"get_per_1000"`    // GET, HEAD
	DeletePer1000 float64 `json:"delete_per_1000"` // DELETE
}

// AWSStandardPrices are AWS S3 Standard's list prices (us-east-1):
// $0.005 per 1,000 PUT/COPY/POST/LIST, $0.0004 per 1,000 GET, DELETE free.
var AWSStandardPrices = Prices{PutPer1000: 0.005, GetPer1000: 0.0004, DeletePer1000: 0}

// Per1000 returns the price of 1,000 requests of kind op.
func (p Prices) Per1000(op Op) float64 {
	switch op {
	case OpGet, OpHead:
		return p.GetPer1000
	case OpDelete:
		return p.DeletePer1000
	default:
		return p.PutPer1000
	}
}

// Cost returns what the requests in s cost at prices p, in US dollars.
// Failed requests are billed like successful ones.
func (s Counts) Cost(p Prices) float64 {
	total := 0.0
	for _, op := range Ops {
		total += float64(s.Total(op)) * p.Per1000(op) / 1000
	}
	return total
}

// Add returns s plus other (for summing the counters of several processes).
func (s Counts) Add(other Counts) Counts {
	d := Counts{OK: map[Op]int64{}, Failed: map[Op]int64{}}
	for _, op := range Ops {
		if n := s.OK[op] + other.OK[op]; n != 0 {
			d.OK[op] = n
		}
		if n := s.Failed[op] + other.Failed[op]; n != 0 {
			d.Failed[op] = n
		}
	}
	return d
}

// All returns the total number of requests of every kind.
func (s Counts) All() int64 {
	var n int64
	for _, op := range Ops {
		n += s.Total(op)
	}
	return n
}
