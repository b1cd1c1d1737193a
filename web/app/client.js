// The app's one connection to the server it came from. `?perturb=RUNTIME` (automated tests
// only: the library refuses it elsewhere) makes that runtime's answers wrong.
import { connect } from "../lib/index.js";

const perturb = new URLSearchParams(location.search).get("perturb");
export let clientProblem = null; // shown by every page instead of its content

function make() {
  try {
    return connect(undefined, perturb ? { testing: { perturb } } : {});
  } catch (error) {
    clientProblem = error;
    return connect();
  }
}

export const client = make();
