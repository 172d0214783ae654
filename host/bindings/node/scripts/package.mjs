// Lays out the npm package from a cargo build of this crate, without
// building again: `napi build` always passes `--target`, which puts every
// crate in target/<triple>/ and compiles wasmtime and the rest a second
// time, so host/bindings/test.sh runs `cargo build --release -p proem-node`
// (the release target dir the tests built) with NAPI_TYPE_DEF_TMP_FOLDER
// set, and this script turns napi-derive's type records into index.d.ts
// with @napi-rs/cli's own generator.
//
//   node package.mjs NAPI_CLI_DIR TYPEDEF_DIR ADDON.so OUT_DIR
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const [cliDir, typeDefDir, addon, out] = process.argv.slice(2);
if (!out) {
  console.error("usage: node package.mjs NAPI_CLI_DIR TYPEDEF_DIR ADDON.so OUT_DIR");
  process.exit(2);
}
const here = dirname(dirname(fileURLToPath(import.meta.url)));
const { generateTypeDef } = await import(pathToFileURL(join(cliDir, "node_modules/@napi-rs/cli/dist/index.js")).href);
const { dts, exports } = await generateTypeDef({ typeDefDir, cwd: here });
if (!exports.includes("Agent") || !dts.includes("buildSync")) {
  console.error(`package.mjs: the type records in ${typeDefDir} do not declare Agent.buildSync: was the crate built with NAPI_TYPE_DEF_TMP_FOLDER set?`);
  process.exit(1);
}
mkdirSync(out, { recursive: true });
writeFileSync(join(out, "index.d.ts"), dts);
for (const file of ["index.js", "package.json", "README.md"]) copyFileSync(join(here, file), join(out, file));
copyFileSync(addon, join(out, "proem.linux-x64-gnu.node"));
const pkg = JSON.parse(readFileSync(join(out, "package.json"), "utf8"));
console.log(`${pkg.name}@${pkg.version}: ${exports.length} exports in ${out}`);
