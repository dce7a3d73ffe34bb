/** esbuild bundles the stylesheet the entry imports into console.<hash>.css. */
declare module '*.css';
