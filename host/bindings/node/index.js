// @proem/proem: loads the native addon built for this platform.
"use strict";
const { platform, arch } = process;
const name = `proem.${platform}-${arch}-gnu.node`;
try {
  module.exports = require(`./${name}`);
} catch (e) {
  if (e && e.code === "MODULE_NOT_FOUND" && String(e.message).includes(name)) {
    throw new Error(
      `@proem/proem: no native addon for ${platform}-${arch} in this package (it has linux-x64-gnu); build one from the repository with host/bindings/test.sh`,
      { cause: e },
    );
  }
  throw e;
}
