// The one hint for a page on another origin that our server refused: the browser reports a CORS
// refusal as a bare network error (a failed fetch, a worker's "script error"), so every such
// message names the setting that decides it (docs: the server's cors_origins).
export const CORS_HINT = "a page on another origin needs the server's cors_origins to list it";

/** The error for a fetch of `url` that failed before any response. */
export function fetchFailed(url, error) {
  return new Error(`GET ${url}: ${error.message} (${CORS_HINT})`);
}
