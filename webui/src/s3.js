// A small S3 client for the page: SigV4 signing by aws4fetch, path-style
// URLs, and the few calls qo needs. The server's Date header is tracked so
// countdowns use the bucket's clock, as qo does.
import { AwsClient } from 'aws4fetch';
import SparkMD5 from 'spark-md5';

// md5Hex is the MD5 of an ArrayBuffer as lowercase hex (the browser's
// SubtleCrypto has no MD5).
const md5Hex = (buf) => SparkMD5.ArrayBuffer.hash(buf);

export class S3Error extends Error {
  constructor(status, code, message) {
    super(`S3 ${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

// TORN_BACKOFF_MS are the waits before each re-read of a torn GET.
export const TORN_BACKOFF_MS = [5, 20, 80];

/** md5ETag returns the MD5 an ETag carries (lowercase hex), or '' for one that is not an MD5. */
const md5ETag = (etag) => {
  const e = (etag ?? '').replace(/^"|"$/g, '').toLowerCase();
  return /^[0-9a-f]{32}$/.test(e) ? e : '';
};

const xmlText = (el, name) => el.getElementsByTagName(name)[0]?.textContent ?? '';

export class S3 {
  constructor({ endpoint, bucket, region, accessKeyId, secretAccessKey, sessionToken }) {
    if (!bucket) throw new Error('no bucket given');
    this.base = `${(endpoint || `https://s3.${region || 'us-east-1'}.amazonaws.com`).replace(/\/+$/, '')}/${encodeURIComponent(bucket)}`;
    this.client = new AwsClient({ accessKeyId, secretAccessKey, sessionToken, service: 's3', region: region || 'us-east-1' });
    this.offset = 0; // server time minus local time, from Date headers
    // requests counts what the page sent, by kind (LIST, GET, PUT,
    // DELETE, LIST-VERSIONS): the page shows what a search or a bulk
    // action cost.
    this.requests = {};
    // Torn reads (see get): whether the server's ETags are body MD5s
    // ('unknown', 'md5' or 'opaque'), learnt from the page's own PUTs.
    this.etags = 'unknown';
    this.stableMismatches = 0;
    this.sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  }

  /** now is the server's time estimate. */
  now() {
    return new Date(Date.now() + this.offset);
  }

  /**
   * url is the address of key. The page builds keys from validated parts
   * only (queue.js); as a last guard, a key with an empty, "." or ".."
   * segment is refused here: the browser would resolve the path before
   * signing it and send the request to another key, or another bucket.
   */
  url(key, params) {
    const segs = String(key).split('/');
    if (segs.some((s) => s === '' || s === '.' || s === '..')) {
      throw new Error(`refused: the key ${JSON.stringify(key)} has an empty, "." or ".." segment, which the browser would resolve to another key: nothing was sent`);
    }
    const path = segs.map(encodeURIComponent).join('/');
    const qs = params ? `?${new URLSearchParams(params)}` : '';
    return `${this.base}/${path}${qs}`;
  }

  async request(method, url, { body, headers } = {}) {
    const params = new URL(url).searchParams;
    const op = method !== 'GET' ? method : params.has('list-type') ? 'LIST' : params.has('versions') ? 'LIST-VERSIONS' : 'GET';
    this.requests[op] = (this.requests[op] || 0) + 1;
    // no-store: the signature travels in headers, so the browser would
    // otherwise answer a GET of the same URL from its cache (heuristic
    // freshness from Last-Modified) and show a state the bucket left.
    const res = await this.client.fetch(url, { method, body, headers, cache: 'no-store' });
    const date = res.headers.get('Date');
    if (date) this.offset = Date.parse(date) + 500 - Date.now(); // Date has second resolution
    return res;
  }

  async fail(res) {
    const text = await res.text();
    let code = res.statusText;
    let message = text.slice(0, 200);
    if (text.startsWith('<')) {
      const doc = new DOMParser().parseFromString(text, 'application/xml');
      code = xmlText(doc, 'Code') || code;
      message = xmlText(doc, 'Message') || message;
    }
    throw new S3Error(res.status, code, message);
  }

  /** list returns one page of keys under prefix. */
  async list(prefix, { startAfter, token, maxKeys = 1000 } = {}) {
    const params = { 'list-type': '2', prefix, 'max-keys': String(maxKeys) };
    if (token) params['continuation-token'] = token;
    else if (startAfter) params['start-after'] = startAfter;
    const res = await this.request('GET', `${this.base}/?${new URLSearchParams(params)}`);
    if (!res.ok) await this.fail(res);
    const doc = new DOMParser().parseFromString(await res.text(), 'application/xml');
    const keys = [...doc.getElementsByTagName('Contents')].map((c) => ({
      key: xmlText(c, 'Key'), etag: xmlText(c, 'ETag'), lastModified: xmlText(c, 'LastModified'),
    }));
    const truncated = xmlText(doc, 'IsTruncated') === 'true';
    return { keys, next: truncated ? xmlText(doc, 'NextContinuationToken') : '' };
  }

  /**
   * get returns {text, etag} or null when the key does not exist.
   *
   * The page writes back what it read with If-Match on its ETag, so the
   * ETag must be the body's: a server that answers an old body with the
   * ETag of the write that replaced it (a torn read) would let a stale
   * write win. As s3store does (store/s3store/etag.go): where the server's
   * ETags are body MD5s (learnt from the page's own PUTs, or from a read
   * that matches), a body that is not its ETag's is read again after 5, 20
   * and 80 ms, and if it does not settle get throws a 412 TornRead (a lost
   * race). Before anything is known, the same mismatch twice is a server
   * whose ETags are not MD5s: the answer is returned as it is, and after
   * two such objects reads are no longer checked.
   */
  async get(key, versionId) {
    const mode = this.etags;
    let first = null;
    let obj = null;
    for (const wait of [0, ...TORN_BACKOFF_MS]) {
      if (wait) await this.sleep(wait);
      obj = await this.getOnce(key, versionId);
      if (!obj || mode === 'opaque' || this.settled(obj)) return obj && { text: obj.text, etag: obj.etag };
      if (first && mode === 'unknown' && obj.etag === first.etag && obj.md5 === first.md5) {
        if (++this.stableMismatches >= 2 && this.etags === 'unknown') this.etags = 'opaque';
        return { text: obj.text, etag: obj.etag };
      }
      first ??= obj;
    }
    if (mode === 'unknown') return { text: obj.text, etag: obj.etag };
    throw new S3Error(412, 'TornRead', `${key}: the server answered a body whose MD5 ${obj.md5} is not its ETag ${obj.etag}, ${TORN_BACKOFF_MS.length + 1} times: treated as a lost race; try again`);
  }

  /** getOnce is one GET: {text, etag, md5} or null. */
  async getOnce(key, versionId) {
    const res = await this.request('GET', this.url(key, versionId ? { versionId } : undefined));
    if (res.status === 404) return null;
    if (!res.ok) await this.fail(res);
    const buf = await res.arrayBuffer();
    return { text: new TextDecoder().decode(buf), etag: res.headers.get('ETag'), md5: md5Hex(buf) };
  }

  /** settled reports whether obj's ETag is not an MD5, or is its body's. */
  settled(obj) {
    const e = md5ETag(obj.etag);
    if (!e) return true;
    if (e !== obj.md5) return false;
    if (this.etags === 'unknown') this.etags = 'md5';
    return true;
  }

  /** put writes body; ifMatch makes it a compare-and-swap, ifNoneMatch: '*' a create-only write. */
  async put(key, body, { ifMatch, ifNoneMatch } = {}) {
    const headers = { 'Content-Type': 'application/json' };
    if (ifMatch) headers['If-Match'] = ifMatch;
    if (ifNoneMatch) headers['If-None-Match'] = ifNoneMatch;
    const res = await this.request('PUT', this.url(key), { body, headers });
    if (!res.ok) await this.fail(res);
    const etag = res.headers.get('ETag');
    this.etags = md5ETag(etag) === md5Hex(new TextEncoder().encode(body ?? '').buffer) ? 'md5' : 'opaque';
    return etag;
  }

  async del(key) {
    const res = await this.request('DELETE', this.url(key));
    if (!res.ok && res.status !== 404) await this.fail(res);
  }

  /** versions lists every version of key, newest first. */
  async versions(key) {
    const out = [];
    let keyMarker = '';
    let versionMarker = '';
    for (;;) {
      const params = { versions: '', prefix: key };
      if (keyMarker) Object.assign(params, { 'key-marker': keyMarker, 'version-id-marker': versionMarker });
      const res = await this.request('GET', `${this.base}/?${new URLSearchParams(params)}`);
      if (!res.ok) await this.fail(res);
      const doc = new DOMParser().parseFromString(await res.text(), 'application/xml');
      for (const el of [...doc.documentElement.children]) {
        if ((el.tagName !== 'Version' && el.tagName !== 'DeleteMarker') || xmlText(el, 'Key') !== key) continue;
        out.push({ versionId: xmlText(el, 'VersionId'), lastModified: xmlText(el, 'LastModified'), deleteMarker: el.tagName === 'DeleteMarker' });
      }
      if (xmlText(doc, 'IsTruncated') !== 'true') return out;
      keyMarker = xmlText(doc, 'NextKeyMarker');
      versionMarker = xmlText(doc, 'NextVersionIdMarker');
    }
  }
}
