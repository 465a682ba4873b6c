// A qo client in TypeScript, its types generated from qo's OpenAPI
// document (npm run generate: openapi-typescript writes src/qo.d.ts) and
// its calls made by openapi-fetch. It submits a task, reads it back and
// lists the pending tasks of its type, and prints what it found as JSON.
//
//	node dist/main.js http://127.0.0.1:8080 [TOKEN]
import createClient from "openapi-fetch";
import type { components, paths } from "./qo.js";

type Task = components["schemas"]["Task"];

const [baseUrl, token] = process.argv.slice(2);
if (!baseUrl) {
  console.error("usage: node dist/main.js BASE_URL [TOKEN]");
  process.exit(2);
}
const qo = createClient<paths>({
  baseUrl,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
});

function fail(what: string, error: unknown): never {
  console.error(`${what}: ${JSON.stringify(error)}`);
  process.exit(1);
}

const submitted = await qo.POST("/api/tasks", {
  body: { type: "resize", input: { path: "cat.jpg" }, max_retries: 2 },
});
if (!submitted.data) fail("submit", submitted.error);
const task: Task = submitted.data;

const read = await qo.GET("/api/tasks/{id}", { params: { path: { id: task.id } } });
if (!read.data) fail("read back", read.error);

const page = await qo.GET("/api/tasks", { params: { query: { status: "pending", type: "resize", limit: 10 } } });
if (!page.data) fail("list", page.error);

const missing = await qo.GET("/api/tasks/{id}", {
  params: { path: { id: "00000000-0000-4000-8000-000000000000" } },
});

console.log(
  JSON.stringify({
    submitted: { id: task.id, status: task.status, max_retries: task.max_retries },
    read: { id: read.data.id, status: read.data.status, input: read.data.input },
    listed: page.data.tasks.map((t) => t.id),
    missing: { status: missing.response.status, code: missing.error?.error.code },
  }),
);
