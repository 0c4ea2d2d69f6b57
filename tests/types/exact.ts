// Exact type equality for the type tests. `const x: T = value` also accepts `any`; exact
// equality does not, so a declaration that degrades to `any` fails here instead of silently
// type-checking every consumer.
export type Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;
export type Expect<T extends true> = T;
