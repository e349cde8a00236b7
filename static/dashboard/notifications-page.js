// The notifications page (issue 36 §2): when the bell's count grows while the page is open
// (bell.js dispatches "mwp:unread"), offer to show what came in rather than moving the list
// under the reader's eyes.

const notice = document.querySelector('[data-field="new-notifications"]');
document.addEventListener("mwp:unread", (event) => {
  if (notice && event.detail.unread > event.detail.before) notice.hidden = false;
});
