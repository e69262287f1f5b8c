// html is htm bound to Preact's h: JSX-like templates in plain JavaScript,
// with no build step.
import { h } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);
