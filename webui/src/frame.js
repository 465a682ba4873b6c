// The page holds credentials and acts on the queue: it refuses to run
// inside a frame, where another site could overlay it and steer clicks.
// qo's own server also sends frame-ancestors 'none' (webui.Handler); the
// copy deployed into a bucket cannot send headers, and a CSP meta element
// cannot set frame-ancestors. app.js imports this module first: when it
// throws, no other module of the page runs.

/** framed reports whether the page is inside a frame (a cross-origin top counts). */
export function framed(win = window) {
  try {
    return win.top !== win.self;
  } catch {
    return true;
  }
}

if (framed()) {
  const p = document.createElement('p');
  p.id = 'framed';
  p.setAttribute('role', 'alert');
  p.textContent = 'This page refuses to run inside a frame: open it in its own tab.';
  document.body.replaceChildren(p);
  throw new Error('qo: the page is framed: it refuses to run');
}
