// The types and Node 22's type stripping: the README's TypeScript example
// (read from the installed package) type-checks against index.d.ts with
// tsc --strict --erasableSyntaxOnly (so it has only syntax a type stripper
// can erase), runs against a live server once amaro (the stripper inside
// Node 22) has erased its types, and on Node 22.6+ runs as a .ts file
// under --experimental-strip-types. Mistyped turns fail to type-check.
// PROEM_TS_TOOLS is a folder whose node_modules has typescript, amaro and
// @types/node (host/clients/test.sh installs them).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { after, before, test } from "node:test";

import { cli, env, MARLOW, serve } from "./helpers.js";

const TOOLS = process.env.PROEM_TS_TOOLS ?? "";
if (!existsSync(path.join(TOOLS, "node_modules", "typescript"))) {
  throw new Error(`PROEM_TS_TOOLS=${TOOLS} has no node_modules/typescript: run host/clients/test.sh`);
}
const tools = createRequire(path.join(TOOLS, "package.json"));
const here = path.dirname(new URL(import.meta.url).pathname);
const packageDir = path.dirname(createRequire(import.meta.url).resolve("@proem/client/package.json"));
const readme = readFileSync(path.join(packageDir, "README.md"), "utf8");
const example = /```ts\n([\s\S]*?)```/.exec(readme)[1];

/** Files that must not type-check, each for one reason. */
const MISTYPED = {
  "typo.ts": 'import { Client } from "@proem/client";\nawait new Client("http://x").build("a", { chanel: "x" });\n',
  "kind.ts": 'import { Client } from "@proem/client";\nawait new Client("http://x").build("a", { chat_kind: "crowd" });\n',
  "result.ts":
    'import { Client } from "@proem/client";\nconst s: string = await new Client("http://x").build("a", { format: "json" });\nexport { s };\n',
};

/**
 * One tsc run over the example, the mistyped files, and index.d.ts copied
 * to a .ts file (so it is checked itself, while --skipLibCheck spares the
 * run @types/node): the error lines of each file.
 */
function typeCheck() {
  writeFileSync(path.join(here, "example.ts"), example);
  writeFileSync(path.join(here, "dts-check.ts"), readFileSync(path.join(packageDir, "index.d.ts"), "utf8"));
  for (const [file, source] of Object.entries(MISTYPED)) writeFileSync(path.join(here, file), source);
  const files = ["example.ts", "dts-check.ts", ...Object.keys(MISTYPED)];
  const out = spawnSync(
    process.execPath,
    [
      path.join(TOOLS, "node_modules", "typescript", "bin", "tsc"),
      "--noEmit",
      "--strict",
      "--skipLibCheck",
      "--target", "es2022",
      "--module", "nodenext",
      "--moduleResolution", "nodenext",
      "--verbatimModuleSyntax",
      "--erasableSyntaxOnly",
      "--types", "node",
      "--typeRoots", path.join(TOOLS, "node_modules", "@types"),
      ...files,
    ],
    { cwd: here, encoding: "utf8", timeout: 120_000 },
  );
  const errors = Object.fromEntries(files.map((f) => [f, []]));
  for (const line of (out.stdout + out.stderr).split("\n")) {
    const match = /^([\w-]+\.ts)\(\d+,\d+\): error TS/.exec(line);
    if (match) (errors[match[1]] ??= []).push(line);
  }
  return { status: out.status, errors };
}

let server;
let checked;
before(async () => {
  checked = typeCheck();
  server = await serve([MARLOW]);
});
after(async () => {
  await server?.stop();
});

test("the README's example and index.d.ts type-check, with only erasable syntax", () => {
  assert.notEqual(checked.status, null, "tsc did not finish");
  assert.deepEqual(checked.errors["example.ts"], []);
  assert.deepEqual(checked.errors["dts-check.ts"], []);
});

test("a mistyped turn or result does not type-check", () => {
  for (const [file, source] of Object.entries(MISTYPED)) {
    assert.ok(checked.errors[file].length > 0, `${file} type-checked:\n${source}`);
  }
});

test("the README's example runs once its types are stripped, as Node 22 strips them", () => {
  const { code } = tools("amaro").transformSync(example, { mode: "strip-only" });
  writeFileSync(path.join(here, "example.mjs"), code);
  const out = spawnSync(process.execPath, ["example.mjs"], {
    cwd: here,
    env: { ...env, PROEM_URL: server.url },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(out.status, 0, out.stderr);
  const report = JSON.parse(cli(MARLOW, ["--channel", "telegram", "--chat-kind", "group", "--group-title", "Lab", "--owner", "u-1", "--format", "json"]).stdout);
  const [first, second] = out.stdout.trim().split("\n");
  assert.equal(first.split(" ")[0], report.stable_hash);
  assert.match(second, /^422 budget a budget of 10 tokens is too small/);
});

const [major, minor] = process.versions.node.split(".").map(Number);
test("the README's example runs as a .ts file under Node's own type stripping", { skip: major < 22 || (major === 22 && minor < 6) ? `Node ${process.versions.node} has no type stripping (22.6+); the amaro test above covers it` : false }, () => {
  const out = spawnSync(process.execPath, ["--experimental-strip-types", "--no-warnings", "example.ts"], {
    cwd: here,
    env: { ...env, PROEM_URL: server.url },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(out.status, 0, out.stderr);
  assert.match(out.stdout, /^[0-9a-f]{64} /);
});
