// The settings a link gives the page, in its fragment (#...), which
// browsers never send to any server: endpoint, bucket, region, ak, sk, st
// (session token), exp (expiry), or api (+ token) to use qo's HTTP API.

/** parseFragment reads a link's fragment ("#a=1&b=2", with or without the "#"). */
export function parseFragment(hash) {
  return Object.fromEntries(new URLSearchParams(String(hash ?? '').replace(/^#/, '')));
}

/** canConnect says whether settings suffice to open the queue without asking for keys. */
export function canConnect(cfg) {
  return Boolean(cfg.api || (cfg.bucket && cfg.ak && cfg.sk));
}
