/**
 * The console's only script, served as a file (the Content-Security-Policy allows `script-src
 * 'self'` and no inline script). On a page that names a version to poll (the approvals inbox), it
 * asks for the inbox's version every 1.5 s and reloads the page when it changed, unless the
 * person is typing. Without JavaScript the page works the same, reloaded by hand.
 */
export const CONSOLE_SCRIPT = `'use strict';
(function () {
  var body = document.body;
  var url = body && body.getAttribute('data-poll');
  if (!url) return;
  var shown = body.getAttribute('data-version');
  function poll() {
    fetch(url, { credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (answer) {
        if (answer && String(answer.version) !== shown) location.reload();
        else setTimeout(poll, 1500);
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1500);
})();
`;

/** The console's style sheet (a file: the CSP allows `style-src 'self'`, no inline style). */
export const CONSOLE_STYLE = `:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; }
header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1rem; background: #1d3557; color: #fff; }
header a { color: #fff; margin-right: 1rem; text-decoration: none; }
header a[aria-current="page"] { text-decoration: underline; font-weight: bold; }
header form { margin-left: auto; }
main { padding: 1rem 1.5rem; max-width: 72rem; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: rgba(127,127,127,.12); padding: .5rem; margin: 0; max-height: 32rem; overflow: auto; }
article { border: 1px solid rgba(127,127,127,.4); border-radius: 6px; padding: .5rem 1rem 1rem; margin-bottom: 1rem; }
dt { font-weight: bold; margin-top: .5rem; }
dd { margin-left: 0; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid rgba(127,127,127,.3); padding: .3rem .5rem; text-align: left; vertical-align: top; }
.meta { color: #666; font-size: .9em; }
.caller { font-size: 1.1em; margin: .3em 0; }
.notice { background: #e9f5e9; color: #1b4d1b; padding: .5rem; }
.error { background: #fdecea; color: #8a1c1c; padding: .5rem; }
.ok { background: #e9f5e9; color: #1b4d1b; padding: .5rem; }
button { padding: .4rem .9rem; cursor: pointer; }
button.approve { background: #2a7a2a; color: #fff; border: 0; border-radius: 4px; }
button.deny { background: #a12a2a; color: #fff; border: 0; border-radius: 4px; }
.answer button { margin-right: .6rem; }
.filters { display: flex; gap: 1rem; align-items: end; margin: 1rem 0; }
.state-failed { color: #a12a2a; font-weight: bold; }
.state-ready { color: #2a7a2a; }
`;
