// qo's dashboard. Everything the page shows comes from the bucket (or qo's
// API) and is rendered as text: task data never reaches innerHTML.
// frame.js first: framed, it stops the page before anything else runs.
import './frame.js';
import { boot } from './shell.js';

boot();
