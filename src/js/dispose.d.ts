
// Appended to the generated .d.ts by scripts/build.sh. The classes declare
// `[Symbol.dispose]()`, which TypeScript's own lib declares only from `esnext.disposable`
// (or `es2025`) on; a consumer on `lib: ["es2022", "dom"]` with `skipLibCheck: false` would
// fail on it. The same declaration as the lib's merges with it where the lib has it.
declare global {
  interface SymbolConstructor {
    readonly dispose: unique symbol;
  }
}
