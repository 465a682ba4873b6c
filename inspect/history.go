package inspect

import "sync"

// maxVersions bounds the version cache: past it, the cache starts again
// empty (a console looks at one task at a time).
const maxVersions = 10000

// versionCache keeps the bodies of task versions read (they never
// change); it implements queue.VersionCache.
type versionCache struct {
	mu   sync.Mutex
	kept map[string][]byte
}

func (c *versionCache) Version(key, versionID string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.kept[key+"\x00"+versionID]
	return b, ok
}

func (c *versionCache) Keep(key, versionID string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kept == nil || len(c.kept) >= maxVersions {
		c.kept = map[string][]byte{}
	}
	c.kept[key+"\x00"+versionID] = body
}
