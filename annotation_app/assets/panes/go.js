// The sign-in hand-off: sends the browser to a cookie route of this server (a path Python names),
// replacing the current page in its history.
export default function ({ data }) {
  if (data && typeof data.target === "string" && data.target.startsWith("/")) window.location.replace(data.target);
}
