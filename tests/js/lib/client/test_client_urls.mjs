// connect(): the server, the repository files and the V2 inference API can each live elsewhere.
import assert from "node:assert/strict";
import { test } from "node:test";

import { connect } from "../../../../web/lib/client/client.js";

test("by default everything is on the server", () => {
  const client = connect("http://server.example/app");
  assert.equal(client.base, "http://server.example/app/");
  assert.equal(client.files, "http://server.example/app/repository/");
  assert.equal(client.inference, "http://server.example/app/");
});

test("files from a CDN and inference from a Ray endpoint, independently", () => {
  const client = connect("http://server.example/", {
    files: "https://cdn.example/onnxport/repository",
    inference: "http://ray.example:8000/",
  });
  assert.equal(client.files, "https://cdn.example/onnxport/repository/");
  assert.equal(client.inference, "http://ray.example:8000/");
  assert.equal(client.url("api/manifest"), "http://server.example/api/manifest"); // the manifest stays on the server
});
