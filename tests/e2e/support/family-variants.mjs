// How many variants of the family the sweeps run (page/family.js's VARIANTS, built without a
// page): what the suites count their checked results by.
import { familyHelpers } from "./page/family.js";

export const FAMILY_VARIANTS = familyHelpers({}).VARIANTS.length;
