// The app's one connection to the server it came from. `?perturb=RUNTIME` (automated tests
// only: the library refuses it elsewhere) makes that runtime's answers wrong.
import { connect } from "../lib/index.js";

const perturb = new URLSearchParams(location.search).get("perturb");
export const client = connect(undefined, perturb ? { testing: { perturb } } : {});
